//go:build !linux

package cluster

import "syscall"

// childProcAttr puts each component in its own process group; only Linux can also tie its life to the parent's.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
