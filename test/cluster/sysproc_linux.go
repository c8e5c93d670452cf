package cluster

import "syscall"

// childProcAttr puts each component in its own process group, so a terminal's Ctrl-C reaches only the parent
// (which then stops components in order), and has the kernel kill it if the parent dies without cleaning up.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
