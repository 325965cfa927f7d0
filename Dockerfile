# One image, two roles: the operator (`manager`) and the BIND pods' sidecar
# (`agent`). It also ships named-checkconf so the operator can check a render
# before it replaces a running config.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The release (internal/version): VERSION names the operator's image and
# the BIND image clusters run by default, both under REGISTRY. Declared
# here, after the module download: a RUN after an ARG misses the cache
# when its value changes, and it changes with every release.
ARG VERSION=v0.0.0-dev
ARG COMMIT=
ARG REGISTRY=git.unkin.net/unkin
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X git.unkin.net/unkin/bind-operator/internal/version.version=${VERSION} -X git.unkin.net/unkin/bind-operator/internal/version.commit=${COMMIT} -X git.unkin.net/unkin/bind-operator/internal/version.repository=${REGISTRY}" \
      -o /out/bind-operator ./cmd

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bind9-utils \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bind-operator /bind-operator
# An ARG ends with its stage: declared again for the labels, after the
# package layer so a new version does not rebuild it.
ARG VERSION=v0.0.0-dev
ARG COMMIT=
LABEL org.opencontainers.image.title="bind-operator" \
      org.opencontainers.image.description="Kubernetes operator that runs and configures BIND 9 from custom resources, and the agent sidecar of its BIND pods" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://git.unkin.net/unkin/bind-operator"
USER 65532:65532
ENTRYPOINT ["/bind-operator"]
CMD ["manager"]
