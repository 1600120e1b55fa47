# The release binary in a distroless image: pure Go (CGO_ENABLED=0, no demo), no shell, a
# non-root user. `zbrecover watch` is meant to run in it; its settings (DATABRICKS_HOST,
# credentials, the store's own credentials) come from the environment.
#
#   docker build -t zbrecover --build-arg VERSION=v1.2.3 .
#   docker run -d --env-file watch.env -p 9464:9464 zbrecover watch main --stage-to … --journal s3://… --metrics-addr :9464
#
# docs/runbook.md ("In a container") says more; docker stop needs --time 120 so that a
# statement in flight can finish.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/zbrecover/zbrecover/cmd.Version=${VERSION}" -o /out/zbrecover .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/zbrecover /usr/local/bin/zbrecover
# The local state directory (a --single-host journal, cached credentials) is writable by the
# non-root user; mount a volume there to keep it.
ENV XDG_STATE_HOME=/home/nonroot/.local/state
EXPOSE 9464
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/zbrecover"]
CMD ["watch", "--help"]
