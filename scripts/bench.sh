#!/usr/bin/env bash
# Measures what issue 14's goals name, each beside its baseline in the same
# run, several times, and prints one table (median, p95, the baseline's
# median, and the median of the per-run ratios), then writes it as JSON
# (bench/results.json, or the path given) for comparison across commits.
#
#   scripts/bench.sh [OUT.json]
#
# PILOT_BENCH_RUNS  runs of each measure (5)
# PILOT_BENCH_SKIP  measures to leave out, any of: start resume screenshot
#                   exec memory image build panel (e.g. "build panel")
# PILOT_BENCH_IDLE  how long a sandbox idles before its memory is read (20s)
# PILOT_IMAGE       the sandbox image (pilot-sandbox:bench unless set, so
#                   that pilot-sandbox:latest is never rebuilt from a tree
#                   under change)
#
# The measures are go test benchmarks (service: BenchmarkStart,
# BenchmarkResume, BenchmarkIdleMemory; tools: BenchmarkScreenshotBeside;
# cmd/pilot-sandbox: BenchmarkExecBeside, BenchmarkStatusBeside), a plain
# `docker build --no-cache` of the image's directory with the classic
# builder the sidecar uses, and the panel's Start in Chromium (ui/bench,
# `npm run bench`). Nothing here asserts a time: a slow machine gives a
# slow table. It needs a Docker engine (scripts/dev-env.sh) and, for the
# panel, Node.js and Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-bench/results.json}"
runs="${PILOT_BENCH_RUNS:-5}"
skip=" ${PILOT_BENCH_SKIP:-} "
export PILOT_SCOPE=test
export PILOT_DEFAULT_IMAGE=desktop
export PILOT_IMAGE="${PILOT_IMAGE:-pilot-sandbox:bench}"
export PATH="$PATH:/usr/local/go/bin"
base_image="${PILOT_BASE_IMAGE:-debian:bookworm-slim}"

raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
wants() { [[ "$skip" != *" $1 "* ]]; }
say() { printf 'bench: %s\n' "$*" >&2; }

# Each line of a go test -bench output is one run: -benchtime sets how
# many iterations it averages, -count how many runs there are.
if wants start; then
  say "start: restart and fresh, ${runs} runs each"
  go test -run '^$' -bench 'BenchmarkStart$' -benchtime 1x -count "$runs" ./service/ | tee "$raw/start.txt" >&2
fi
if wants resume; then
  say "resume: ${runs} runs of 10 each"
  go test -run '^$' -bench 'BenchmarkResume$' -benchtime 10x -count "$runs" ./service/ | tee "$raw/resume.txt" >&2
fi
if wants screenshot; then
  say "screenshot: ${runs} runs of 20 each"
  go test -run '^$' -bench 'BenchmarkScreenshotBeside$' -benchtime 20x -count "$runs" ./tools/ | tee "$raw/screenshot.txt" >&2
fi
if wants exec; then
  say "CLI exec and status: ${runs} runs of 10 each, the app serving the project and alone"
  go test -run '^$' -bench '^Benchmark(Exec|Status)Beside$/' -benchtime 10x -count "$runs" ./cmd/pilot-sandbox/ | tee "$raw/exec.txt" >&2
fi
if wants memory; then
  say "idle memory: ${runs} sandboxes"
  go test -run '^$' -bench 'BenchmarkIdleMemory$' -benchtime 1x -count "$runs" -timeout 30m ./service/ | tee "$raw/memory.txt" >&2
fi
if wants image; then
  # The image the benchmarks above used (they build it when missing).
  docker image inspect -f '{{.Size}}' "$PILOT_IMAGE" >"$raw/image.txt" || true
fi
if wants build; then
  say "build: ${runs} builds without cache from ${base_image}"
  for _ in $(seq "$runs"); do
    began=$(date +%s%N)
    DOCKER_BUILDKIT=0 docker build -q --no-cache --build-arg "BASE_IMAGE=${base_image}" \
      -t pilot-sandbox:bench-build resources/docker/sandbox >/dev/null
    echo $(( ($(date +%s%N) - began) / 1000000 )) >>"$raw/build.txt"
  done
  docker rmi pilot-sandbox:bench-build >/dev/null
fi
if wants panel; then
  say "panel: Start to a drawn desktop in Chromium, $((runs + 1)) runs (the first creates the sandbox)"
  go build -o "$raw/pilot-sandbox" ./cmd/pilot-sandbox
  (cd ui && { [ -d node_modules ] || npm ci --silent; } &&
    PILOT_BENCH_RUNS=$((runs + 1)) PILOT_SANDBOX_BIN="$raw/pilot-sandbox" npm run --silent bench) |
    tee "$raw/panel.txt" >&2 || say "panel: the browser benchmark failed (Node.js, Chromium?); left out"
fi

python3 - "$raw" "$out" "$runs" <<'EOF'
import json, os, platform, re, subprocess, sys, time

raw, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])

def read(name):
    path = os.path.join(raw, name)
    return open(path).read() if os.path.exists(path) else ""

def bench_runs(text, name):
    """Each run of benchmark name: its metrics by unit."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or not re.fullmatch(re.escape(name) + r"(-\d+)?", fields[0]):
            continue
        found.append({unit: float(v) for v, unit in zip(fields[2::2], fields[3::2])})
    return found

def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    i = q * (len(xs) - 1)
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)

rows = []

def row(measure, unit, values, goal, baseline_name=None, baselines=(), ratios=()):
    if not values:
        return
    rows.append({
        "measure": measure, "unit": unit, "runs": len(values), "values": values,
        "median": quantile(values, 0.5), "p95": quantile(values, 0.95), "goal": goal,
        "baseline": baseline_name, "baselineMedian": quantile(list(baselines), 0.5),
        "baselineValues": list(baselines), "ratioMedian": quantile(list(ratios), 0.5),
    })

start = read("start.txt")
for sub, measure, base, goal in [("restart", "restart to ready", "docker start", "<= 500 ms"),
                                 ("fresh", "fresh create to ready", "docker run -d", "<= 700 ms")]:
    rs = bench_runs(start, "BenchmarkStart/" + sub)
    row(measure, "ms", [r["ns/op"] / 1e6 for r in rs], goal, base,
        [r["baseline-ms"] for r in rs], [r["ratio"] for r in rs])
    for phase in ("pre", "engine", "ready", "post"):
        row("  %s: %s" % (sub, phase), "ms", [r[phase + "-ms"] for r in rs], "")

resumes = bench_runs(read("resume.txt"), "BenchmarkResume")
row("resume from pause to ready", "ms", [r["ns/op"] / 1e6 for r in resumes], "<= 100 ms",
    "docker unpause", [r["baseline-ms"] for r in resumes], [r["ratio"] for r in resumes])
row("  resume: the API's unpause alone", "ms", [r["api-ms"] for r in resumes], "")

shots = read("screenshot.txt")
for sub in ("desktop", "terminals", "typing"):
    rs = bench_runs(shots, "BenchmarkScreenshotBeside/" + sub)
    row("screenshot 1280x800 PNG, %s" % sub, "ms", [r["ns/op"] / 1e6 for r in rs], "<= 10 ms",
        "docker exec scrot", [r["baseline-ms"] for r in rs], [r["ratio"] for r in rs])

for name, command, base, goal in [("BenchmarkExecBeside", "exec -- true", "docker exec C true", "<= 1.3x"),
                                  ("BenchmarkStatusBeside", "status", "docker inspect C", "")]:
    for sub, who in [("app_serving", "the app serving"), ("alone", "no other process")]:
        rs = bench_runs(read("exec.txt"), name + "/" + sub)
        row("pilot-sandbox %s, %s" % (command, who), "ms", [r["ns/op"] / 1e6 for r in rs],
            goal if sub == "app_serving" else "", base, [r["baseline-ms"] for r in rs], [r["ratio"] for r in rs])

mem = bench_runs(read("memory.txt"), "BenchmarkIdleMemory")
row("idle sandbox memory", "MiB", [r["MiB"] for r in mem], "<= 45 MiB")

size = read("image.txt").strip()
if size:
    row("desktop image", "MB", [int(size) / 1e6], "<= 350 MB")

builds = [int(x) / 1000 for x in read("build.txt").split()]
row("build from the base, no cache", "s", builds, "<= 30 s")

panel = read("panel.txt")
drawn = [(int(n), int(ms)) for n, ms in re.findall(r"run (\d+) \([^)]*\): (\d+) ms to a drawn desktop", panel)]
row("panel Start to desktop drawn, restart", "ms", [ms for n, ms in drawn if n > 1], "<= 800 ms")
row("panel Start to desktop drawn, create", "ms", [ms for n, ms in drawn if n == 1], "")

def fmt(v):
    return "" if v is None else ("%.3g" % v if v < 10 else "%.0f" % v)

print("%-44s %6s %8s %8s %-18s %8s %6s  %s" % ("measure", "unit", "median", "p95", "baseline", "median", "ratio", "goal"))
for r in rows:
    print("%-44s %6s %8s %8s %-18s %8s %6s  %s" % (r["measure"], r["unit"], fmt(r["median"]), fmt(r["p95"]),
          r["baseline"] or "", fmt(r["baselineMedian"]), fmt(r["ratioMedian"]), r["goal"]))

def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
result = {
    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "commit": sh("git", "rev-parse", "HEAD"),
    "machine": {"cpus": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
                "docker": sh("docker", "version", "-f", "{{.Server.Version}}"),
                "loadavg": open("/proc/loadavg").read().split()[:3]},
    "runs": runs,
    "measures": rows,
}
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out, "w") as f:
    json.dump(result, f, indent=1)
print("\nwritten to %s" % out)
EOF
