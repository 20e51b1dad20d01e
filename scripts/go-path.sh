# Sourced by the scripts that build with Go (scripts/helm.sh, scripts/stack/cluster.sh): the
# official Go tarball's /usr/local/go/bin on PATH when no `go` is on it. Its installer leaves PATH
# to the user's shell profile, so a script started with a plain PATH (as .ci/run may be) otherwise
# did not find the Go the machine has: Helm's first build then failed, while the cluster profile,
# which looked there itself, built.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  PATH="/usr/local/go/bin:$PATH"
  export PATH
fi
