package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/legate-dev/legate/render"
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
	// Inherited by every subcommand: an unknown flag gets the closest one.
	root.SetFlagErrorFunc(flagError)
	root.SetVersionTemplate("legate {{.Version}} (commit " + commit + ")\n")
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddCommand(newVersionCommand(), newServeCommand(), newControllerCommand(), newStatusCommand(),
		newValidateCommand(), newSchemaCommand(), newUntaintCommand(), newPKICommand(),
		newGetCommand(), newDiffCommand(), newReconcileCommand(),
		newSuspendCommand(true), newSuspendCommand(false), newPruneCommand(),
		newBootstrapCommand(), newInjectCommand(), newRolloutCommand())
	return root
}

// flagError adds "did you mean" to pflag's "unknown flag: --nod" with the
// closest flag of the command (its own and those it inherits) and says
// where the list is.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	add := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	if s := render.Suggest(name, names); s != "" {
		return fmt.Errorf("%s, did you mean --%s? (%s --help lists the flags)", msg, s, cmd.CommandPath())
	}
	return fmt.Errorf("%s (%s --help lists the flags)", msg, cmd.CommandPath())
}
