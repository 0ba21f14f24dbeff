#!/usr/bin/env bash
# What the agent costs a host with a real NVIDIA driver, beside the same executable on the fake
# libnvidia-ml.so (the figure test/bench/agent-overhead.ts gives on machines without a GPU).
# Runs where Node.js is absent: needs bash, gcc, python3 and the release tarball.
#
#   agent-on-gpu.sh AGENT_TARBALL OUT_DIR [SECONDS]
#
# 1. nvml.txt: NVML's own cost in a fresh python3 process (ctypes): RSS after dlopen, after
#    nvmlInit_v2, after the device handle, after a GPM sample; then the mean wall time of one call of
#    each kind the agent makes every poll (2,000 calls each).
# 2. agents.txt: three agents at once, default intervals (poll 1 s, flush 10 s, send 60 s), unsigned to
#    a loopback stub that answers 202: `real` on the host's NVML, `fake1` and `fake8` on the fake library
#    with 1 and 8 GPUs. For each: peak RSS (VmHWM), CPU over the whole run and over the steady part
#    (after the first third), and for `real` the mappings that hold the most resident memory.
# With PROFILE=1 instead: the agent on the host's NVML alone, with V8's CPU profile (`--cpu-prof`
# through NODE_OPTIONS, which the single executable honours) in OUT_DIR/*.cpuprofile and each
# thread's CPU over the steady part in threads.txt: where the real driver's extra CPU goes.
set -u
TARBALL=$1
OUT=$2
SECONDS_RUN=${3:-180}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
tar xzf "$TARBALL" -C "$WORK"
AGENT="$WORK/agent/gpu-sentinel-agent"
mkdir -p "$WORK/fake"
gcc -shared -fPIC -O2 -o "$WORK/fake/libnvidia-ml.so.1" "$HERE/../fake-nvml/fake-nvml.c" -lpthread
export GLIBC_TUNABLES='glibc.malloc.arena_max=1:glibc.malloc.trim_threshold=0:glibc.malloc.mmap_threshold=65536'

PORT=18766
python3 - "$PORT" <<'EOF' &
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', '0')))
        self.send_response(202)
        self.send_header('Content-Length', '14')
        self.end_headers()
        self.wfile.write(b'{"accepted":1}')
    def log_message(self, *args):
        pass
HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
EOF
sleep 1

thread_ticks() { # pid: "tid comm ticks" per thread
  for t in /proc/"$1"/task/*; do
    echo "$(basename "$t") $(tr ' ' '_' <"$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done
}
if [ "${PROFILE:-}" = 1 ]; then
  NODE_OPTIONS="--cpu-prof --cpu-prof-dir=$OUT" "$AGENT" agent --imds off --instance-id i-0c4e2000000000001 \
    --instance-type p5en.48xlarge --region us-east-1 --az us-east-1a --endpoint "http://127.0.0.1:$PORT" \
    --auth none --spool-dir "$WORK/spool" >/dev/null 2>"$WORK/agent.log" &
  pid=$!
  # NVML's own memory when it does not attach to the GPUs at init (NVML_INIT_FLAG_NO_ATTACH).
  python3 - >"$OUT/nvml-no-attach.txt" 2>&1 <<'EOF'
import ctypes
def rss(what):
    print(what, [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS')][0], 'kB')
rss('python3 alone:')
nvml = ctypes.CDLL('libnvidia-ml.so.1')
rss('after dlopen:')
print('nvmlInitWithFlags(NO_ATTACH) ->', nvml.nvmlInitWithFlags(2))
rss('after nvmlInitWithFlags(2):')
dev = ctypes.c_void_p()
print('handle ->', nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)))
mw = ctypes.c_uint()
print('power ->', nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(mw)), mw.value)
rss('after a handle and a power reading:')
EOF
  sleep $((SECONDS_RUN / 3))
  thread_ticks "$pid" >"$WORK/t0"
  sleep $((SECONDS_RUN - SECONDS_RUN / 3))
  thread_ticks "$pid" >"$WORK/t1"
  {
    echo "ticks (1/$(getconf CLK_TCK) s) per thread over the last $((SECONDS_RUN - SECONDS_RUN / 3)) s"
    join "$WORK/t0" "$WORK/t1" | awk '{print $1, $2, $5 - $3}'
    grep -v RetiredPages "$WORK/agent.log" | cut -c1-300 | head -8
  } >"$OUT/threads.txt" 2>&1
  kill -TERM "$pid"
  wait "$pid"
  exit 0
fi

python3 - >"$OUT/nvml.txt" 2>&1 <<'EOF'
import ctypes, time
def rss():
    for line in open('/proc/self/status'):
        if line.startswith(('VmRSS', 'VmHWM')):
            print('  ' + line.strip())
print('python3 alone:'); rss()
nvml = ctypes.CDLL('libnvidia-ml.so.1')
print('after dlopen:'); rss()
assert nvml.nvmlInit_v2() == 0
print('after nvmlInit_v2:'); rss()
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
print('after nvmlDeviceGetHandleByIndex_v2:'); rss()
sample = ctypes.c_void_p()
gpm = nvml.nvmlGpmSampleAlloc(ctypes.byref(sample))
gpm_get = nvml.nvmlGpmSampleGet(dev, sample) if gpm == 0 else gpm
print(f'after nvmlGpmSampleAlloc ({gpm}) + nvmlGpmSampleGet ({gpm_get}):'); rss()
util = (ctypes.c_uint * 2)()
mw = ctypes.c_uint()
mem = (ctypes.c_ulonglong * 3)()
temp = ctypes.c_uint()
# nvmlFieldValue_t is 40 bytes; the agent asks for its fields in one call.
fields = (ctypes.c_ubyte * (40 * 8))()
for i, fid in enumerate([1, 2, 3, 4, 5, 6, 7, 8]):
    ctypes.c_uint.from_buffer(fields, 40 * i).value = fid
calls = {
    'nvmlDeviceGetUtilizationRates': lambda: nvml.nvmlDeviceGetUtilizationRates(dev, util),
    'nvmlDeviceGetPowerUsage': lambda: nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(mw)),
    'nvmlDeviceGetMemoryInfo': lambda: nvml.nvmlDeviceGetMemoryInfo(dev, mem),
    'nvmlDeviceGetTemperature': lambda: nvml.nvmlDeviceGetTemperature(dev, 0, ctypes.byref(temp)),
    'nvmlDeviceGetFieldValues (8 fields)': lambda: nvml.nvmlDeviceGetFieldValues(dev, 8, fields),
    'nvmlGpmSampleGet': lambda: nvml.nvmlGpmSampleGet(dev, sample),
}
print('mean wall time of one call (2000 calls, after 50 warm-up):')
for name, call in calls.items():
    for _ in range(50):
        call()
    t = time.perf_counter()
    for _ in range(2000):
        rc = call()
    print(f'  {name}: {(time.perf_counter() - t) / 2000 * 1e6:.1f} us (return {rc})')
print('after the calls:'); rss()
EOF


start_agent() { # name, env...: starts one agent, its pid in PID[name]
  local name=$1
  shift
  env "$@" "$AGENT" agent --imds off --instance-id i-0c4e2000000000001 --instance-type p5en.48xlarge \
    --region us-east-1 --az us-east-1a --endpoint "http://127.0.0.1:$PORT" --auth none \
    --spool-dir "$WORK/spool-$name" >/dev/null 2>"$WORK/$name.log" &
  PID[$name]=$!
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A PID T0 T1
start_agent real
start_agent fake1 GPU_SENTINEL_NVML_LIB="$WORK/fake/libnvidia-ml.so.1" FAKE_NVML_GPU_COUNT=1
start_agent fake8 GPU_SENTINEL_NVML_LIB="$WORK/fake/libnvidia-ml.so.1" FAKE_NVML_GPU_COUNT=8
STEADY_AFTER=$((SECONDS_RUN / 3))
sleep "$STEADY_AFTER"
for n in real fake1 fake8; do T0[$n]=$(cpu_ticks "${PID[$n]}"); done
sleep $((SECONDS_RUN - STEADY_AFTER))
HZ=$(getconf CLK_TCK)
{
  echo "run ${SECONDS_RUN} s, steady part the last $((SECONDS_RUN - STEADY_AFTER)) s; CPU in % of one core"
  for n in real fake1 fake8; do
    T1[$n]=$(cpu_ticks "${PID[$n]}")
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/${PID[$n]}/status")
    awk -v n="$n" -v hwm="$hwm" -v t0="${T0[$n]}" -v t1="${T1[$n]}" -v hz="$HZ" -v all="$SECONDS_RUN" \
      -v steady="$((SECONDS_RUN - STEADY_AFTER))" 'BEGIN {
        printf "%-6s peak %.1f MiB  whole %.3f %%  steady %.3f %%\n", n, hwm / 1024, t1 / hz / all * 100, (t1 - t0) / hz / steady * 100 }'
  done
  echo "real: smaps_rollup"
  cat "/proc/${PID[real]}/smaps_rollup"
  echo "real: the 15 mappings with the most resident memory (kB, path)"
  awk '/^[0-9a-f]+-[0-9a-f]+ / {path = ($6 == "" ? "[anon]" : $6)} /^Rss:/ {rss[path] += $2} END {
    for (p in rss) print rss[p], p }' "/proc/${PID[real]}/smaps" | sort -rn | head -15
  echo "fake8: the 8 mappings with the most resident memory (kB, path)"
  awk '/^[0-9a-f]+-[0-9a-f]+ / {path = ($6 == "" ? "[anon]" : $6)} /^Rss:/ {rss[path] += $2} END {
    for (p in rss) print rss[p], p }' "/proc/${PID[fake8]}/smaps" | sort -rn | head -8
  for n in real fake1 fake8; do echo "$n log:"; grep -v RetiredPages "$WORK/$n.log" | cut -c1-300 | head -8; done
} >"$OUT/agents.txt" 2>&1
for n in real fake1 fake8; do kill -TERM "${PID[$n]}"; done
wait "${PID[real]}" "${PID[fake1]}" "${PID[fake8]}"
