// Minimal candidates: every change a candidate makes against the baseline earns its keep.
//
// A candidate is a set of changes (heads, KV heads, hidden size, MLP width, vocabulary, layers,
// experts). Undoing one gives another shape; when that shape is a legal candidate too and the
// candidate's merit over it (its "gain") is within the uncertainty of their ratio (or under
// kMinKnobGain), the change is not worth making and is undone. Changes are undone one at a time,
// the cheapest first, until every change left earns its keep; each candidate then carries what
// each of its changes accounts for (CandidateScore::knob_gains), which the reasons print. A change
// whose undoing is not a legal candidate (the layers that keep a wider model within the budget,
// say) stays, and is reported with its gain unknown.
//
// This is what makes GPT-2's advice "pad the vocabulary" rather than "pad the vocabulary and
// change the heads": the head change gains 1.00× ± 0.02 and is undone.
#ifndef WAVECREST_CORE_MINIMAL_CANDIDATES_H_
#define WAVECREST_CORE_MINIMAL_CANDIDATES_H_

#include <functional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/recommend.h"

namespace wavecrest {

// A change must account for at least this much (besides exceeding its uncertainty) to stay: an
// architecture change worth less is not worth a team's time.
inline constexpr double kMinKnobGain = 0.005;

// One change of a candidate against the baseline, and the candidate's shape without it.
struct CandidateChange {
  std::string words;   // "v 50257 → 50304"
  ModelSpec without;   // the candidate with this change undone (not yet checked by the rules)
};

// The changes of `candidate` against `base`. Hidden size carries what follows it (the head
// count at the same head dim, an MLP width scaled with it, the layers that keep the budget);
// an MLP width that moved on its own carries the layers when the hidden size did not move.
// `tp_lcm` is what sharded widths round to (CandidateRules::tp_lcm).
std::vector<CandidateChange> ChangesOf(const ModelSpec& base, const ModelSpec& candidate,
                                       int64_t tp_lcm);

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
