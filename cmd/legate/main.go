// Command legate is the GitOps control plane for Envoy: one binary whose
// subcommands run the standalone server, the Kubernetes controller, the
// admission webhook and the offline validator.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}
