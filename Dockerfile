# fedmesh's three images from one build: the targets manager (with kubectl-fedmesh), federator and proxy, which the
# chart pulls as <image.repository>/<target>. `make images` builds them with the version stamp of `make build`:
#   docker build --build-arg LDFLAGS="-X github.com/fedmesh/fedmesh/pkg/version.gitVersion=v0.1.0 ..." \
#     --target manager -t REPOSITORY/manager:TAG .
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

FROM gcr.io/distroless/static-debian12:nonroot AS base
# 65532 is distroless's "nonroot"; numeric so that runAsNonRoot can verify it.
USER 65532:65532

FROM base AS proxy
COPY --from=build /out/proxy /proxy
ENTRYPOINT ["/proxy"]

FROM base AS federator
COPY --from=build /out/federator /federator
ENTRYPOINT ["/federator"]

FROM base AS manager
COPY --from=build /out/manager /out/kubectl-fedmesh /
ENTRYPOINT ["/manager"]
