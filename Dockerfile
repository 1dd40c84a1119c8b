# countersign's container image: the static binary on a distroless base, run
# as a non-root user, no shell. Build from the repository's root:
#
#   docker build -t countersign .
#
# The version stamped is the VERSION file's; --build-arg VERSION=… overrides it.
# Without COUNTERSIGN_CONFIG it runs the local demo on the embedded store in
# /var/lib/countersign; in production give it COUNTERSIGN_DATABASE_URL and a
# configuration (deploy/kubernetes shows both).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=
RUN version=${VERSION:-$(tr -d '[:space:]' <VERSION)} \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" \
      -o /out/countersign ./cmd/countersign \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/countersign /usr/local/bin/countersign
COPY --from=build --chown=65532:65532 /out/data /var/lib/countersign
ENV COUNTERSIGN_LISTEN=:8080 \
    COUNTERSIGN_ADMIN_LISTEN=:9090 \
    COUNTERSIGN_DATA_DIR=/var/lib/countersign \
    COUNTERSIGN_LOG_FORMAT=json
USER 65532:65532
EXPOSE 8080 9090
VOLUME ["/var/lib/countersign"]
ENTRYPOINT ["/usr/local/bin/countersign"]
CMD ["serve"]
