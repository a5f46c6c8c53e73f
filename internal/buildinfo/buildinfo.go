// Package buildinfo carries the version stamped into the binary at build
// time: go build -ldflags "-X slipway/internal/buildinfo.Version=v1.2.3".
package buildinfo

import "runtime"

// Version is the release version, "dev" for untagged builds.
var Version = "dev"

// Commit is the source commit, if stamped.
var Commit = ""

// GoVersion is the toolchain that built the binary.
func GoVersion() string { return runtime.Version() }
