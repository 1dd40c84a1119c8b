# countersign: make run, make test, make bench, make verify.
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/countersign?sslmode=disable
GO_TEST_FLAGS ?= -count=1 -timeout 30m

.PHONY: run test test-race lint verify bench bench-executor fuzz

# Runs countersign on the local PostgreSQL with the example configuration.
run:
	@psql "$(subst /countersign?,/postgres?,$(DATABASE_URL))" -qtAc "SELECT 1 FROM pg_database WHERE datname = 'countersign'" | grep -q 1 || \
		createdb -h 127.0.0.1 -U postgres countersign
	COUNTERSIGN_DATABASE_URL="$(DATABASE_URL)" \
	COUNTERSIGN_CONFIG=examples/countersign.yml \
	COUNTERSIGN_DISPATCH_SECRET=local-dispatch-secret \
	COUNTERSIGN_LISTEN=127.0.0.1:8080 \
	go run ./cmd/countersign serve

# Every test, on the real PostgreSQL at 127.0.0.1:5432 (COUNTERSIGN_TEST_DATABASE_URL overrides).
test:
	go vet ./...
	go test $(GO_TEST_FLAGS) ./...

test-race:
	go test $(GO_TEST_FLAGS) -race ./approvals/... ./store/...

lint: verify

# gofmt, go vet and go mod tidy must leave the tree unchanged.
verify:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt would change the files above"; exit 1)
	go vet ./...
	go mod tidy -diff

# Benchmarks; results and how to read them are in docs/BENCHMARKS.md.
bench:
	go run ./cmd/intakebench

# Executor burn-down and approval-to-dispatch latency (creates and drops a scratch database).
bench-executor:
	go run ./cmd/execbench -database-url "$(subst /countersign?,/postgres?,$(DATABASE_URL))"

fuzz:
	go test ./approvals/ -run '^$$' -fuzz FuzzDecodeIntent -fuzztime 60s
