# One image with all of fedmesh's binaries: /proxy, /manager, /federator and /kubectl-fedmesh. The chart runs each
# container of it with its own command. `make images` builds it with the version stamp of `make build`:
#   docker build --build-arg LDFLAGS="-X github.com/fedmesh/fedmesh/pkg/version.gitVersion=v0.1.0 ..." -t IMAGE .
# Static (no cgo), distroless, and run as a non-root user.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a change of the code alone reuses the downloaded modules.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
# The -X flags of the Makefile's LDFLAGS; empty leaves the version "v0.0.0-dev".
ARG LDFLAGS=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${LDFLAGS}" -o /out/ \
      ./cmd/proxy ./cmd/manager ./cmd/federator ./cmd/kubectl-fedmesh

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /
# 65532 is distroless's "nonroot"; numeric so that runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/federator"]
