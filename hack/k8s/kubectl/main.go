// Command kubectl is the upstream kubectl, built from the module proxy so fedmesh's tests can drive a real one
// through the proxy.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
