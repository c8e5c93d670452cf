package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/test/cluster"
)

const stampedVersion = "v9.9.9-e2e"

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// fedmeshBinary builds cmd/<name> once per test run, with the version stamped the way the Makefile does.
func fedmeshBinary(t testing.TB, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "fedmesh-e2e-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-ldflags",
			"-X github.com/fedmesh/fedmesh/pkg/version.gitVersion="+stampedVersion,
			"-o", binDir+"/", "./cmd/proxy", "./cmd/manager", "./cmd/federator", "./cmd/kubectl-fedmesh")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func run(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestBinariesCommandLine(t *testing.T) {
	for _, name := range []string{"proxy", "manager", "federator"} {
		t.Run(name, func(t *testing.T) {
			bin := fedmeshBinary(t, name)
			if out, _, code := run(t, bin, "--version"); code != 0 || !strings.Contains(out, name+" "+stampedVersion) {
				t.Errorf("--version: exit %d, output %q; want 0 and %q", code, out, name+" "+stampedVersion)
			}
			if out, _, code := run(t, bin, "--help"); code != 0 || !strings.Contains(out, "Usage:") {
				t.Errorf("--help: exit %d, output %q", code, out)
			}
			_, errOut, code := run(t, bin, "--no-such-flag")
			if code != 2 || !strings.Contains(errOut, "unknown flag: --no-such-flag") || !strings.Contains(errOut, "--help") {
				t.Errorf("bad flag: exit %d, stderr %q; want exit 2 naming the flag and pointing at --help", code, errOut)
			}
			_, errOut, code = run(t, bin, "extra-argument")
			if code != 2 || !strings.Contains(errOut, "unknown command") {
				t.Errorf("stray argument: exit %d, stderr %q; want exit 2", code, errOut)
			}
			if name != "proxy" {
				_, errOut, code = run(t, bin, "--pprof-bind-address", "nowhere")
				if code != 2 || !strings.Contains(errOut, `--pprof-bind-address "nowhere"`) {
					t.Errorf("bad address: exit %d, stderr %q; want exit 2 naming the flag", code, errOut)
				}
			}
		})
	}
}

// freeAddr is a free loopback address for a process of the test to listen on (see cluster.FreePort).
func freeAddr(t testing.TB) string {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// startBinary runs bin until the test ends and returns a function that reports its output so far.
func startBinary(t testing.TB, bin string, args ...string) func() string {
	t.Helper()
	output, _ := startKillableBinary(t, bin, args...)
	return output
}

// startKillableBinary is startBinary that also returns a kill: SIGKILL now, as a crash would.
func startKillableBinary(t testing.TB, bin string, args ...string) (output func() string, kill func()) {
	t.Helper()
	var out bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(bin, args...)
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	output = func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	kill = func() {
		cmd.Process.Kill()
		<-done
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			kill()
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), output())
		}
	})
	return output, kill
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitHTTP polls url until it answers 200.
func waitHTTP(t testing.TB, url string, output func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered 200 (last: %v)\n%s", url, err, output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestControllerBinariesServeProbesAgainstARealAPIServer(t *testing.T) {
	c := cluster.New(t, cluster.Options{})
	if err := c.InstallCRDs(context.Background(), filepath.Join(sourceRoot(t), "charts/fedmesh/crds")); err != nil {
		t.Fatal(err)
	}
	extra := map[string][]string{"manager": {"--xds-insecure", "--xds-bind-address", "127.0.0.1:0"}}
	for _, name := range []string{"manager", "federator"} {
		t.Run(name, func(t *testing.T) {
			probes, metrics, pprof := freeAddr(t), freeAddr(t), freeAddr(t)
			output := startBinary(t, fedmeshBinary(t, name), append([]string{"--kubeconfig", c.Kubeconfig(),
				"--health-probe-bind-address", probes, "--metrics-bind-address", metrics, "--pprof-bind-address", pprof,
				"--leader-election-namespace", "default"}, extra[name]...)...)
			waitHTTP(t, "http://"+probes+"/readyz", output)
			waitHTTP(t, "http://"+probes+"/healthz", output)
			waitHTTP(t, "http://"+metrics+"/metrics", output)
			waitHTTP(t, "http://"+pprof+"/debug/pprof/cmdline", output)
			// Leader election really ran against the API server: the Lease exists.
			deadline := time.Now().Add(30 * time.Second)
			for {
				_, err := c.Clientset().CoordinationV1().Leases("default").Get(context.Background(), "fedmesh-"+name, metav1.GetOptions{})
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no Lease fedmesh-%s: %v\n%s", name, err, output())
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}
