package suite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// Usage is a process's resident memory and the CPU time it has used so far.
type Usage struct {
	RSSBytes   float64
	CPUSeconds float64
}

// ReadUsage reads pid's usage from /proc.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields start after its closing parenthesis.
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	fields := strings.Fields(string(rest))
	// After the name: state(3) ... utime(14) stime(15) ... rss(24), counted from 1 with pid and name first.
	if len(fields) < 22 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	rssPages, _ := strconv.ParseFloat(fields[21], 64)
	return Usage{RSSBytes: rssPages * float64(os.Getpagesize()), CPUSeconds: (utime + stime) / clockTicks}, nil
}

// ChildPIDs are the running processes whose parent is this process and whose command name is name.
func ChildPIDs(name string) []int {
	var out []int
	for _, c := range children() {
		if c.name == name {
			out = append(out, c.pid)
		}
	}
	return out
}

// ChildCPU is the CPU time the running child processes of this process have used so far, in seconds, by command
// name (as the kernel keeps it: cut to 15 bytes).
func ChildCPU() map[string]float64 {
	out := map[string]float64{}
	for _, c := range children() {
		if u, err := ReadUsage(c.pid); err == nil {
			out[c.name] += u.CPUSeconds
		}
	}
	return out
}

type child struct {
	pid  int
	name string
}

// children are the running processes whose parent is this process.
func children() []child {
	entries, _ := os.ReadDir("/proc")
	var out []child
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, child{pid: pid, name: strings.TrimSpace(string(comm))})
		}
	}
	return out
}

// MiB is bytes in MiB.
func MiB(bytes float64) float64 { return bytes / (1 << 20) }
