package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
)

func newGetCommand() *cobra.Command {
	var cf clientFlags
	var output string
	cmd := &cobra.Command{
		Use:   "get NODE [REVISION]",
		Short: "Print the configuration a node is served, as YAML or JSON",
		Long: `get prints the resources of the revision a running legate serve serves to
NODE (or of REVISION, a hash or unique prefix from legate status NODE), each as
Envoy's JSON with its type, name and the file it came from. The key material
of secrets is never shown.`,
		Example: `  legate get edge
  legate get edge -o json | jq '.resources[] | select(.type == "Cluster") | .name'
  # a revision from the history
  legate get edge 3c959b7021e1`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, []string{"yaml", "json"}); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			rev := "served"
			if len(args) == 2 {
				rev = args[1]
			}
			v, err := c.revision(cmd.Context(), args[0], rev)
			if err != nil {
				return err
			}
			return printJSONOrYAML(cmd.OutOrStdout(), output, v)
		},
	}
	cf.bind(cmd.Flags(), false)
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func newDiffCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "diff NODE REV1 [REV2]",
		Short: "Show how two revisions of a node differ",
		Long: `diff prints a unified diff between two revisions of NODE, resource by
resource, as YAML. REV1 and REV2 are revision hashes or unique prefixes (legate
status NODE lists them); "served" names the revision served, and REV2
defaults to it.`,
		Example: `  # what the rejected revision changed against what is served
  legate diff edge 9df5d6dfec05 served
  legate diff edge 3705fb024c2f 9df5d6dfec05`,
		Args:              cobra.RangeArgs(2, 3),
		ValidArgsFunction: completeNodes(&cf),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			to := "served"
			if len(args) == 3 {
				to = args[2]
			}
			a, err := c.revision(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			b, err := c.revision(cmd.Context(), args[0], to)
			if err != nil {
				return err
			}
			return writeDiff(cmd.OutOrStdout(), a, b)
		},
	}
	cf.bind(cmd.Flags(), false)
	return cmd
}

// writeDiff writes the unified diff of two revisions' resources as YAML,
// or says they are equal.
func writeDiff(w io.Writer, a, b readapi.RevisionView) error {
	left, err := revisionText(a)
	if err != nil {
		return err
	}
	right, err := revisionText(b)
	if err != nil {
		return err
	}
	if left == right {
		fmt.Fprintf(w, "revisions %s and %s of node %s have the same resources\n", revisions.Short(a.Hash), revisions.Short(b.Hash), a.Node)
		return nil
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(left), B: difflib.SplitLines(right),
		FromFile: revisionLabel(a), ToFile: revisionLabel(b), Context: 3,
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

func revisionLabel(v readapi.RevisionView) string {
	label := revisions.Short(v.Hash)
	if v.Origin.Commit != "" {
		label += " (commit " + revisions.Short(v.Origin.Commit) + ")"
	}
	if v.Served {
		label += " served"
	}
	return label
}

// revisionText is a revision's resources as YAML, one document per
// resource, in the order the API gives (type, then name).
func revisionText(v readapi.RevisionView) (string, error) {
	var b strings.Builder
	for _, r := range v.Resources {
		fmt.Fprintf(&b, "# %s %s\n", r.Type, r.Name)
		if r.Redacted {
			b.WriteString("(secret: key material not shown)\n")
			continue
		}
		var obj any
		if err := json.Unmarshal(r.Value, &obj); err != nil {
			return "", err
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return "", err
		}
		y, err := jsonToYAML(data)
		if err != nil {
			return "", err
		}
		b.Write(y)
		b.WriteString("---\n")
	}
	return b.String(), nil
}
