// Package version reports what build of fedmesh is running. The Makefile stamps the variables with -ldflags.
package version

import (
	"fmt"
	"runtime"
)

// Stamped at build time: -X github.com/fedmesh/fedmesh/pkg/version.gitVersion=v0.1.0 and so on.
var (
	gitVersion = "v0.0.0-dev"
	gitCommit  = "unknown"
	buildDate  = "unknown"
)

// Info describes a build.
type Info struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit"`
	BuildDate  string `json:"buildDate"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns the running build's Info.
func Get() Info {
	return Info{
		GitVersion: gitVersion,
		GitCommit:  gitCommit,
		BuildDate:  buildDate,
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String is the one-line form --version prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s %s)", i.GitVersion, i.GitCommit, i.BuildDate, i.GoVersion, i.Platform)
}
