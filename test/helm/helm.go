package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// Namespace is the namespace the chart must be installed into.
const Namespace = "fedmesh-system"

// ChartDir is charts/fedmesh in this checkout.
func ChartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "fedmesh")
}

// Binary is the helm binary built by hack/build-binaries.sh, or an error saying how to get it.
func Binary() (string, error) {
	bin := filepath.Join(cluster.DefaultBinDir(), "helm")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("helm not found at %s: run `make binaries` (hack/build-binaries.sh builds it from hack/tools/go.mod)", bin)
	}
	return bin, nil
}

// Run runs helm with args and returns its standard output, or an error carrying its standard error. Helm keeps its
// caches and configuration in dir, not the user's home.
func Run(dir string, args ...string) (string, error) {
	bin, err := Binary()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// generated matches what the chart generates afresh on every render: keys, certificates and what derives from
// them.
var generated = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^(\s+(?:ca\.crt|manager\.crt|manager\.key|federator\.crt|federator\.key|caBundle): ).+$`),
	regexp.MustCompile(`(?m)^(\s+(?:checksum/ca|fedmesh\.io/not-after): ).+$`),
}

// Normalize replaces the generated parts of a rendering with a placeholder, so renderings compare.
func Normalize(manifest string) string {
	for _, re := range generated {
		manifest = re.ReplaceAllString(manifest, "${1}<generated>")
	}
	return manifest
}
