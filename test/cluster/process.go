package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one child process — a control-plane component, or a fedmesh binary a test or the demo runs: its
// command, its log file, and whether it has exited.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // its exit status, once done is closed
}

// StartProcess runs bin with args, logging stdout and stderr to dir/<name>.log; the process dies with its
// parent (see childProcAttr), so a killed test or demo leaves nothing running.
func StartProcess(name, dir, bin string, args ...string) (*Process, error) {
	return StartProcessWithEnv(name, dir, bin, nil, args...)
}

// StartProcessWithEnv is StartProcess with env (KEY=value) added to this process's environment.
func StartProcessWithEnv(name, dir, bin string, env []string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, and SIGKILL if the process is still running after grace.
func (p *Process) Stop(grace time.Duration) {
	if done, _ := p.Exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// stateRoot holds one directory per running cluster, named "<pid>-<name>-<random>", so a later run can remove
// what a killed test process left behind.
func stateRoot() string { return filepath.Join(os.TempDir(), "fedmesh-clusters") }

// newStateDir makes this cluster's directory after sweeping the directories of processes that no longer exist.
func newStateDir(name string) (string, error) {
	root := stateRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		pidText, _, _ := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	return os.MkdirTemp(root, fmt.Sprintf("%d-%s-", os.Getpid(), name))
}

// LogPath is the file the process logs to.
func (p *Process) LogPath() string { return p.logPath }

// PID is the process's id, for reading its resource use from /proc.
func (p *Process) PID() int { return p.cmd.Process.Pid }
