#!/usr/bin/env python3
# CPU and wall time of one call of the NVML functions the agent reads at a window's edge, and of
# nvmlDeviceGetFieldValues for each field set the agent asks for (python3 ctypes, GPU 0; 100 calls
# of the energy counter, 400 of the others, after 20 warm-up calls each). No Node.js needed.
# Run on a GPU host: python3 test/bench/nvml-call-cost.py  (figures: BENCHMARKS.md, 2026-11-28,
# "the agent's NVML calls on the H200"). Each line: name, process CPU time and wall time a call,
# and the last return (for field values: the call's, then each value's nvmlReturn; 3 = NOT_SUPPORTED).
# Field ids: 82 HBM temperature, 197/198 PCIe TX/RX bytes, 38/45 NVLink CRC, 138/139 NVLink bytes.
import ctypes as C,time
n=C.CDLL('libnvidia-ml.so.1');assert n.nvmlInit_v2()==0
d=C.c_void_p();n.nvmlDeviceGetHandleByIndex_v2(0,C.byref(d))
def F(ids):
 b=(C.c_ubyte*(40*len(ids)))()
 for i,f in enumerate(ids):
  C.c_uint.from_buffer(b,40*i).value=f;C.c_uint.from_buffer(b,40*i+4).value=0xFFFFFFFF if f in(138,139) else 0
 return lambda:(n.nvmlDeviceGetFieldValues(d,len(ids),b),[C.c_uint.from_buffer(b,40*i+28).value for i in range(len(ids))])
u=C.c_ulonglong();w=C.c_uint();v=(C.c_ulonglong*2)();r=[C.c_uint() for _ in range(4)]
K={'energy':lambda:n.nvmlDeviceGetTotalEnergyConsumption(d,C.byref(u)),'violation':lambda:n.nvmlDeviceGetViolationStatus(d,0,v),'powerlimit':lambda:n.nvmlDeviceGetEnforcedPowerLimit(d,C.byref(w)),'replay':lambda:n.nvmlDeviceGetPcieReplayCounter(d,C.byref(w)),'ecc':lambda:n.nvmlDeviceGetTotalEccErrors(d,0,0,C.byref(u)),'remap':lambda:n.nvmlDeviceGetRemappedRows(d,*[C.byref(x) for x in r])}
for s in([82],[198],[197],[82,198],[82,197,198],[38,45,82,138,139,197,198]):K['fields %s'%s]=F(s)
for k,f in K.items():
 m=100 if k=='energy' else 400
 for _ in range(20):f()
 c,t=time.process_time(),time.perf_counter()
 for _ in range(m):x=f()
 print('%s: cpu %.1f us wall %.1f us ret %s'%(k,(time.process_time()-c)/m*1e6,(time.perf_counter()-t)/m*1e6,x))
