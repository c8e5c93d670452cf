package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfile checks what the image promises: multi-stage, static, non-root, all four binaries, stamped
// through the LDFLAGS build argument.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	if n := strings.Count(df, "\nFROM "); n < 2 {
		t.Errorf("%d FROM lines; want a multi-stage build", n)
	}
	for _, want := range []string{"CGO_ENABLED=0", "ARG LDFLAGS", "${LDFLAGS}", "USER 65532:65532",
		"./cmd/proxy", "./cmd/manager", "./cmd/federator", "./cmd/kubectl-fedmesh",
		"AS manager", "AS federator", "AS proxy"} { // the images the chart pulls as <repository>/<name>
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
}

// TestMakeImages runs `make images` without Docker (a clear error) and with a fake docker that records its
// arguments (the build gets the Makefile's version stamp and the tag).
func TestMakeImages(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "env", "git", "date", "make"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	makeImages := func() (string, error) {
		cmd := exec.Command(filepath.Join(bin, "make"), "images", "VERSION=v9.8.7", "IMAGE=example.com/fedmesh")
		cmd.Dir = root()
		cmd.Env = []string{"PATH=" + bin, "HOME=" + os.Getenv("HOME")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := makeImages()
	if err == nil || !strings.Contains(out, "make images needs Docker: no 'docker' command found") {
		t.Fatalf("without docker: err %v, output:\n%s", err, out)
	}

	args := filepath.Join(t.TempDir(), "args")
	fake := "#!/usr/bin/env bash\n[ \"$1\" = info ] && exit 0\nprintf '%s\\n' \"$@\" >>" + args + "\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := makeImages(); err != nil {
		t.Fatalf("with docker: %v\n%s", err, out)
	}
	got, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"build\n", "-X github.com/fedmesh/fedmesh/pkg/version.gitVersion=v9.8.7",
		"--target\nmanager\n-t\nexample.com/fedmesh/manager:v9.8.7\n", "-t\nexample.com/fedmesh/proxy:v9.8.7\n", "-t\nexample.com/fedmesh/federator:v9.8.7\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("docker was called with\n%s\nwant %q in it", got, want)
		}
	}
}
