# Sourced by the benchmark scripts: the first line of every file under bench/results/.
# bench_header: "# <UTC date> <kernel>, <cores> cores, <CPU model> @ <MHz>, commit <sha>[+changes]"
# (+changes: the working tree differs from the commit in code a benchmark runs).
bench_header() {
  local cpu mhz commit
  cpu=$(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//')
  mhz=$(awk -F: '/cpu MHz/ {printf "%.0f MHz", $2; exit}' /proc/cpuinfo)
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD -- core service server bench proto ':!bench/results' 2>/dev/null || commit="$commit+changes"
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) cores, ${cpu:-unknown CPU} @ ${mhz:-? MHz}, commit $commit"
}
