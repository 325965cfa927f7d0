# One image, two roles: the operator (`manager`) and the BIND pods' sidecar
# (`agent`). It also ships named-checkconf so the operator can check a render
# before it replaces a running config.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/bind-operator ./cmd

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bind9-utils \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bind-operator /bind-operator
USER 65532:65532
ENTRYPOINT ["/bind-operator"]
CMD ["manager"]
