// Minimal candidates: every change a candidate makes against the baseline earns its keep.
//
// A candidate is a set of changes (vocabulary, hidden size, head dim, KV group, an MLP width of
// its own, layers, experts). Undoing one gives another shape; when that shape is not a legal
// candidate (a wider model's layers alone break the budget; a head dim alone does not divide the
// old width), the change is coupled to others, and the smallest set of changes that can be
// undone together is one bundle (h, heads and layers moved together, say). Each change or bundle
// has a gain, the candidate's merit over itself without it, never 0: at worst the bundle is every
// change and the shape without it the baseline. When a gain is within the uncertainty of its
// ratio (or under kMinKnobGain), the change or bundle is not worth making and is undone, one at a
// time, the cheapest first, until every one left earns its keep; each candidate then carries
// what each accounts for (CandidateScore::knob_gains), which the reasons print.
//
// This is what makes GPT-2's advice "pad the vocabulary" rather than "pad the vocabulary and
// change the heads": the head change gains 1.00x ± 0.02 and is undone; and a reshape of h, heads
// and layers that adds 1.02x ± 0.04 to a vocabulary pad is undone as one bundle.
#ifndef WAVECREST_CORE_MINIMAL_CANDIDATES_H_
#define WAVECREST_CORE_MINIMAL_CANDIDATES_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/recommend.h"

namespace wavecrest {

// A change must account for at least this much (besides exceeding its uncertainty) to stay: an
// architecture change worth less is not worth a team's time.
inline constexpr double kMinKnobGain = 0.005;

// One change of a candidate against the baseline, or a coupled bundle of them, and the
// candidate's shape without it (admitted by the rules).
struct CandidateChange {
  std::string words;               // "v 50257 → 50304"; a bundle's parts joined by " + "
  std::vector<std::string> parts;  // a bundle's single changes; empty for a single change
  ModelSpec without;
  // Cannot be undone: every shape without it breaks the tensor-parallel degrees the request named,
  // as the baseline does (StrictTp); `without` is the baseline, and Minimize keeps it.
  bool required = false;
  // A required change: the candidate with it alone (every other change undone), when the rules
  // admit that shape; its gain is that shape's over the baseline. Unset when it is the candidate.
  std::optional<ModelSpec> alone;
};

// The changes and bundles of `candidate` against `rules.base()`: each single change in exactly
// one, the smallest set of changes that contains it and can be undone into a shape the rules
// admit (the baseline itself at worst), sets that share a change merged, in the order of the
// single changes. Where the rules do not admit the baseline (it breaks the degrees asked), the
// changes that undo into nothing else are one required bundle, first. A hidden size carries what follows it (the head count at the same head dim,
// an MLP width scaled with it).
std::vector<CandidateChange> ChangesOf(const ModelSpec& candidate, const CandidateRules& rules);

// Scores a shape with the same source of times as the candidates (its baseline flag unset).
using ShapeScoreFn = std::function<CandidateScore(const ModelSpec&)>;

// True when a change gains more than its uncertainty and kMinKnobGain.
bool EarnsItsKeep(double gain, double sigma);

// Minimizes the first `shown` non-baseline candidates of `ranked` (RankCandidates' order) that
// beat the baseline, and fills the knob_gains of all of them (one that does not beat it is a
// shape that was compared, kept as it is: undone, it would be the baseline); re-ranks with RankCandidates(ranked, explain) after each round, until
// every candidate in the first `shown` places is minimized (shapes that become the baseline or
// another candidate are dropped).
void MinimizeCandidates(std::vector<CandidateScore>& ranked, const CandidateRules& rules,
                        const ShapeScoreFn& score, size_t shown, size_t explain);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MINIMAL_CANDIDATES_H_
