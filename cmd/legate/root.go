package main

import (
	"github.com/spf13/cobra"
)

// newRootCommand builds the command tree. Subcommands only parse flags and
// wire packages together; the work happens in the packages they call.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "legate",
		Short: "GitOps control plane for Envoy",
		Long: `legate fetches Envoy configuration from Git repositories and OCI artifacts,
validates it before any proxy sees it, keeps every accepted version as a
revision, serves the published one over xDS and rolls back by itself when
proxies reject it.`,
		Example: `  # follow a repository and serve its configuration
  legate serve --git-url https://git.example/org/envoy-config.git --node edge
  # check a configuration before pushing it
  legate validate ./config
  # where everything stands
  legate status`,
		Version:      version,
		SilenceUsage: true,
	}
	root.SetVersionTemplate("legate {{.Version}} (commit " + commit + ")\n")
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddCommand(newVersionCommand(), newServeCommand(), newControllerCommand(), newStatusCommand(),
		newValidateCommand(), newSchemaCommand(), newUntaintCommand(), newPKICommand(),
		newGetCommand(), newDiffCommand(), newReconcileCommand(),
		newSuspendCommand(true), newSuspendCommand(false), newPruneCommand(),
		newBootstrapCommand(), newInjectCommand())
	return root
}
