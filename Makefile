# countersign: make run, make test, make bench, make verify.
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/countersign?sslmode=disable
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# The linter make test and make verify run: staticcheck's default checks, at
# a pinned version (fetched through the module proxy on first use).
STATICCHECK = go run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: sdk chaos chaos-mutants simulate-day run test test-race clean-test-databases lint verify release bench bench-intake bench-executor bench-slack bench-list bench-waiters bench-retention bench-scale peers fuzz

# Runs countersign on the local PostgreSQL (or DATABASE_URL's, created if
# missing) with the example configuration, and the fake provider it
# dispatches to on 127.0.0.1:9090.
run:
	scripts/ensure-database "$(DATABASE_URL)"
	go build -o bin/ ./cmd/countersign ./cmd/fakeprovider
	bin/fakeprovider -listen 127.0.0.1:9090 -secret local-dispatch-secret & provider=$$!; \
	trap 'kill $$provider' EXIT; \
	COUNTERSIGN_DATABASE_URL="$(DATABASE_URL)" \
	COUNTERSIGN_CONFIG=examples/countersign.yml \
	COUNTERSIGN_DISPATCH_SECRET=local-dispatch-secret \
	COUNTERSIGN_LISTEN=127.0.0.1:8080 \
	bin/countersign serve

# Every test, on the real PostgreSQL at 127.0.0.1:5432 (COUNTERSIGN_TEST_DATABASE_URL
# overrides) and a headless Chromium; scripts/test-deps starts or installs them.
# The benchmark programs have smoke tests of their own (TestSmoke); every
# Benchmark function then runs once at a tiny size (-short shrinks the seeded
# tables and storms), so a change that breaks a benchmark fails here. The River
# peers in bench/peers are a module of their own, built and tested last.
test:
	scripts/test-deps
	go vet ./...
	$(STATICCHECK) ./...
	go test $(GO_TEST_FLAGS) ./...
	go test -short -run '^$$' -bench . -benchtime 1x -timeout 5m ./...
	cd bench/peers && go build ./... && go vet ./... && go test $(GO_TEST_FLAGS) ./...

test-race:
	go test $(GO_TEST_FLAGS) -race ./approvals/... ./hook/... ./store/... ./inbox/... ./lookup/... ./executor/... ./cmd/countersign/...

# Drops the databases make test leaves on the test server: the migrated
# templates it keeps to clone from, and any a killed run left behind.
clean-test-databases:
	scripts/drop-test-databases

lint: verify

# gofmt, go vet and go mod tidy must leave the tree unchanged, and
# staticcheck find nothing.
verify:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt would change the files above"; exit 1)
	go vet ./...
	$(STATICCHECK) ./...
	go mod tidy -diff
	cd bench/peers && go vet ./... && go mod tidy -diff

# Static binaries for linux and darwin on amd64 and arm64, with SHA256SUMS,
# in dist/, stamped with the VERSION file's version (see scripts/release).
release:
	scripts/release dist

# The SDKs as files to install, in dist/, at the VERSION file's version
# (scripts/sdk-version writes it into them): the Python wheel and sdist,
# built with the standard library only (sdk/python/build_dist.py), and the
# npm tarball, whose dist/ npm pack compiles afresh with the pinned tsc.
# pip install --no-index dist/countersign-*.whl; npm install ./dist/countersign-client-*.tgz.
sdk:
	python3 sdk/python/build_dist.py dist
	test -x sdk/typescript/node_modules/.bin/tsc || (cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error)
	cd sdk/typescript && npm pack --pack-destination $(CURDIR)/dist

# Benchmarks; results and how to read them are in docs/BENCHMARKS.md.
bench: bench-intake bench-executor bench-slack bench-list bench-waiters bench-retention

# The River peers (bench/peers, a module of their own) built into bin/.
peers:
	cd bench/peers && go build -o $(CURDIR)/bin/ ./riverexec ./riverhook

# The agent hook beside the River hook, one run: countersign serve and the
# River hook on scratch databases of their own, the same load (new intents and
# replays, phases interleaved over 5 rounds) at 8 and 32 clients, and the raw
# one-row commit rate.
bench-intake: peers
	go run ./cmd/intakebench -database-url "$(subst /countersign?,/postgres?,$(DATABASE_URL))" \
		-clients 8,32 -rounds 5 -duration 2s -peer $(CURDIR)/bin/riverhook

# Executor burn-down, approval-to-dispatch latency and an auto-approved
# write's intake-to-dispatch latency beside River's burn-down and
# enqueue-to-work latency, bare and keeping countersign's records
# (riverexec -ledger), 4 rounds (scratch databases, dropped at the end).
bench-executor: peers
	go run ./cmd/execbench -database-url "$(subst /countersign?,/postgres?,$(DATABASE_URL))" \
		-executions 20000 -trickle 200 -rounds 4 -peer $(CURDIR)/bin/riverexec

# Waiting agents: countersign serve on a scratch database with 10,000
# long-polls (?wait=60s) held from another process; serve's memory per
# waiter, its CPU and its database's commits while nothing changes, and how
# soon a cancel wakes its waiter.
bench-waiters:
	go run ./cmd/waitbench -database-url "$(subst /countersign?,/postgres?,$(DATABASE_URL))" \
		-waiters 10000 -changes 200 -idle 20s

# The Slack surface: a storm of signed clicks, and lookups over 1,000,000 requests.
bench-slack:
	go test ./bot/ -run '^$$' -bench 'ClickStorm|Lookup' -benchtime 1x -timeout 30m

# GET /v1/requests with 1,000,000 requests in the table: page latency by filter,
# a page deep by cursor, and each query's plan.
bench-list:
	go test ./hook/ -run '^$$' -bench List -benchtime 1x -timeout 60m

# The retention sweep over 1,000,000 settled requests (each with its
# decision, vote, execution, card, outbox rows, callback and audit events)
# while intake runs beside it: rows pruned a second, the longest batch
# transaction, intake p50/p99 alone and beside the sweep, lock waits.
# COUNTERSIGN_BENCH_REQUESTS=100000 make bench-retention runs it smaller.
bench-retention:
	go test ./cmd/countersign/ -run '^$$' -bench Retention -benchtime 1x -timeout 60m

# Lookups, listing pages and intake with 10,000,000 requests in the table, on
# one seeded database kept between runs (storetest.SeededURL): the first run
# seeds it, the others reuse it. Drop it when done:
# psql -c 'DROP DATABASE cs_bench_10m'.
BENCH_SCALE = COUNTERSIGN_BENCH_REQUESTS=10000000 COUNTERSIGN_BENCH_DATABASE=cs_bench_10m
bench-scale:
	$(BENCH_SCALE) go test ./bot/ -run '^$$' -bench Lookup -benchtime 1x -timeout 60m
	$(BENCH_SCALE) go test ./hook/ -run '^$$' -bench List -benchtime 1x -timeout 60m
	$(BENCH_SCALE) go test ./cmd/countersign/ -run '^$$' -bench IntakeAtScale -benchtime 1x -timeout 60m

fuzz:
	go test ./internal/strictjson/ -run '^$$' -fuzz FuzzCheck -fuzztime 60s
	go test ./approvals/ -run '^$$' -fuzz FuzzDecodeIntent -fuzztime 60s
	go test ./internal/intentkey/ -run '^$$' -fuzz FuzzCanonicalBasis -fuzztime 30s
	go test ./internal/intentkey/ -run '^$$' -fuzz FuzzCanonicalize -fuzztime 60s
	go test ./internal/intentkey/ -run '^$$' -fuzz FuzzExactNumbers -fuzztime 60s -fuzzminimizetime 5s
	go test ./approvals/ -run '^$$' -fuzz FuzzEffectSchemaCheck -fuzztime 30s
	go test ./bot/ -run '^$$' -fuzz FuzzParseClick -fuzztime 30s
	go test ./lookup/ -run '^$$' -fuzz FuzzParse -fuzztime 30s
	go test ./bot/ -run '^$$' -fuzz FuzzVerify -fuzztime 30s
	go test ./executor/ -run '^$$' -fuzz FuzzClassify -fuzztime 30s
	go test ./internal/signature/ -run '^$$' -fuzz FuzzVerify -fuzztime 30s

# The chaos run (cmd/chaos): three replicas on a fresh database of a
# PostgreSQL cluster the run creates for itself (initdb on a free port; it
# needs the server binaries: apt-get install postgresql), 24 kills -9 and one
# restart of that cluster, under 5 minutes; exits non-zero when a figure is
# off. Its short version is TestShortChaos in make test. See docs/RELIABILITY.md.
chaos:
	go run ./cmd/chaos -restart-postgres

# The short chaos run once per bug planted in the core code (build tag
# chaosmutant, internal/mutant): prints which check caught each and fails if
# one survives. make test runs the quick ones (TestMutantsCaught).
chaos-mutants:
	go run ./cmd/chaos -mutants all -database-url "$(subst /countersign?,/postgres?,$(DATABASE_URL))"

# A compressed day of a shared service's traffic (cmd/chaos -simulate-day):
# 24 simulated hours in 4.5 minutes on three replicas and a fresh database,
# bursty agents on a daily curve, reviewers at human speed, a replica killed
# -9 at noon; prints queue depths, latencies and Slack calls hour by hour and
# exits non-zero when a bound is broken. DAY=10m slows it down. Its tiny
# version is TestTinyDay in make test. See docs/SCALING.md.
DAY ?= 270s
simulate-day:
	go run ./cmd/chaos -simulate-day -day $(DAY) -database-url "$(subst /countersign?,/postgres?,$(DATABASE_URL))"
