package suite

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestReadUsageOfThisProcess(t *testing.T) {
	// Burn a little CPU and hold some memory, so both figures must be above zero.
	buf := make([]byte, 32<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSSBytes < float64(len(buf)) || u.CPUSeconds <= 0 {
		t.Errorf("usage %+v: want RSS >= %d bytes and some CPU time", u, len(buf))
	}
}

func TestChildPIDs(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pids := ChildPIDs("sleep")
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Errorf("ChildPIDs(sleep) = %v, want [%d]", pids, cmd.Process.Pid)
	}
}

func TestChildCPU(t *testing.T) {
	// A child that burns CPU until killed.
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ChildCPU()["sh"] > 0 {
			return
		}
	}
	t.Errorf("ChildCPU() = %v: want CPU time for sh", ChildCPU())
}
