#!/bin/bash
# bench/gpu.py on a lent GPU machine with no network, in one call (docs/benchmarks.md, "GPU:
# the issue's targets"): installs what .gpu/ carries (Python 3.12 wheels, llama-cpp-python's
# llama_cpp package, a CUDA build of its llama.cpp as cuda.tar.xz, else the trimmed sdist as
# sdist.tar.gz to build there, a tokenizer GGUF), writes stand-in models, checks that the
# bindings see the GPU, runs a smoke test of corral serve, then the benchmark. Output goes to
# $OUT (run.log, serve.log, models.json, bench.txt). BENCH_S limits the benchmark's seconds.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee -a $OUT/run.log) 2>&1
t0=$(date +%s); stamp() { echo "== $(( $(date +%s) - t0 ))s: $*"; }
SITE=/tmp/site; B=/tmp/b; M=/tmp/m
mkdir -p $SITE $B $M
stamp setup
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SITE .gpu/wheels/*.whl || exit 1
cp -r .gpu/llama_cpp $SITE/llama_cpp
if [ -f .gpu/cuda.tar.xz ]; then tar -xJf .gpu/cuda.tar.xz -C $B; else
  stamp building; mkdir -p /tmp/src && tar -xzf .gpu/sdist.tar.gz -C /tmp/src
  cmake -S /tmp/src/llama.cpp -B /tmp/bb -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=ON -DGGML_RPC=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >/dev/null && cmake --build /tmp/bb -j 16 --target llama-server llama-quantize llama-common mtmd >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
  mkdir -p $B/bin && cp -a /tmp/bb/bin/* $B/bin/; fi
mkdir -p $SITE/llama_cpp/lib $SITE/lib
cp -a $B/bin/*.so* $SITE/llama_cpp/lib/; cp -a $B/bin/libllama-common.so* $SITE/lib/
for d in llama_cpp_python:0.3.36 corral:0.1.0; do n=${d%%:*}; v=${d##*:}; mkdir -p $SITE/$n-$v.dist-info
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' $n $v > $SITE/$n-$v.dist-info/METADATA; done
LIBS=$(for l in libcublas.so.13 libcudart.so.13 libcublasLt.so.13; do find /usr/local/cuda*/ /opt /usr/lib /usr/local/nvidia -name $l 2>/dev/null | head -1 | xargs -r dirname; done | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=$B/bin:$LIBS${LD_LIBRARY_PATH:-}
export PYTHONPATH=$SITE:$PWD
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
ldd $B/bin/libggml-cuda.so | grep -i "not found\|cuda\|cublas"
python3 -c "import llama_cpp; print('gpu offload:', llama_cpp.llama_supports_gpu_offload())" || exit 1
python3 -c "from router.capacity.devices import device_inventory as d; i=d(); print(type(i).__name__, i.devices())"
stamp models
# Never a bare `wait`: bash 5.1+ waits for the tee of the process substitution above too.
python3 -m bench.support.standin --tokenizer .gpu/tokenizer.gguf --shape smollm2-135m --out $M/s-f16.gguf &
p=$!; python3 -m bench.support.standin --tokenizer .gpu/tokenizer.gguf --shape llama-1b --out $M/b-f16.gguf; wait $p
$B/bin/llama-quantize $M/s-f16.gguf $M/S135.gguf Q4_1 16 >/dev/null 2>&1 &
p=$!; $B/bin/llama-quantize $M/b-f16.gguf $M/B1b.gguf Q4_K_M 16 >/dev/null 2>&1; wait $p
rm -f $M/*-f16.gguf; ls -la $M
stamp list-devices
timeout 60 python3 -m router serve --list-devices
stamp smoke
python3 -m router serve -m $M/B1b.gguf --port 8090 > $OUT/serve.log 2>&1 &
SP=$!
for i in $(seq 120); do curl -sf localhost:8090/health >/dev/null && break; sleep 0.5; done
curl -s localhost:8090/v1/chat/completions -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":16}' | head -c 400; echo
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
curl -s localhost:8090/models > $OUT/models.json; curl -s localhost:8090/metrics | grep -i -E 'device|vram|gpu' | head -40
python3 -c "import json;d=json.load(open('$OUT/models.json'));[print(json.dumps({k:m.get(k) for k in ('id','status','memory','placement')}), json.dumps(m.get('meta',{}).get('fit'))) for m in d['data']]"
timeout 20 python3 -m router ps --url http://127.0.0.1:8090 2>&1 | head -20
kill $SP; wait $SP
stamp bench
timeout ${BENCH_S:-420} python3 -m bench.gpu --llama-server $B/bin/llama-server --model $M/B1b.gguf --model-b $M/S135.gguf ${BENCH_ARGS:-} 2>&1 | tee $OUT/bench.txt
stamp done
