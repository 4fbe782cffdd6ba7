package main

import (
	"fmt"

	"github.com/spf13/cobra"

	legatecue "github.com/legate-dev/legate/render/cue"
)

func newSchemaCommand() *cobra.Command {
	var (
		pkg          string
		untranslated bool
	)
	cmd := &cobra.Command{
		Use:   "schema TYPE",
		Short: "Print the CUE schema legate generates for an Envoy message type",
		Long: `schema prints the CUE definition of an Envoy v3 message type and of every
message it refers to, generated from the protobuf descriptors compiled into
legate, with the protoc-gen-validate rules as CUE constraints. TYPE is a full
name (envoy.config.cluster.v3.Cluster), a type URL, or a short name (Cluster).
Save the output in your CUE module and unify your values with #<ShortName>.

--untranslated lists the validation rules CUE cannot express; legate still
enforces them when it decodes the configuration.`,
		Example: `  legate schema Cluster > cue.mod/pkg/envoy/cluster.cue
  legate schema envoy.config.route.v3.RouteConfiguration --package routes
  legate schema Cluster --untranslated`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			gen := legatecue.NewGenerator(nil)
			md, err := gen.Lookup(args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if untranslated {
				for _, r := range gen.Untranslated(md) {
					fmt.Fprintln(w, r)
				}
				return nil
			}
			_, err = fmt.Fprint(w, gen.Source(md, pkg, true))
			return err
		},
	}
	cmd.Flags().StringVar(&pkg, "package", "envoy", "CUE package name of the output")
	cmd.Flags().BoolVar(&untranslated, "untranslated", false, "list the validation rules the schema does not express instead")
	return cmd
}
