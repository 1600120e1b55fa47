package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textfmt"
)

// registerCompletions adds the value completions of the flags of root's tree.
func registerCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("output", fixedValues("text\tfor people", "json\tone JSON document", "jsonl\tinspect: one JSON object per line"))
	_ = root.RegisterFlagCompletionFunc("profile", completeProfiles)
	_ = root.RegisterFlagCompletionFunc("storage-auth", fixedValues("auto\tvended when the environment has no credentials for the store",
		"vended\tthe credentials Unity Catalog vends for the table", "default\tthe store's own credential chain"))
	from := fixedValues("delta\tthe Delta log at the table root", "warehouse\tthe SQL warehouse (DESCRIBE TABLE)", "uc\tUnity Catalog")
	for _, c := range root.Commands() {
		if c.Flags().Lookup("from") != nil {
			_ = c.RegisterFlagCompletionFunc("from", from)
		}
		switch c.Name() {
		case "schema":
			_ = c.RegisterFlagCompletionFunc("output", fixedValues("text", "json", "ddl\ta Spark column list"))
		case "preview":
			_ = c.RegisterFlagCompletionFunc("format", fixedValues("table", "json", "csv"))
			_ = c.RegisterFlagCompletionFunc("group", completeFromReport(func(rep *inspect.Report) []string {
				var out []string
				for _, g := range rep.Groups {
					out = append(out, fmt.Sprintf("%s\t%s, %s", g.SchemaID, textfmt.Plural(g.Files, "file"), textfmt.Plural(g.Rows, "row")))
				}
				return out
			}))
			_ = c.RegisterFlagCompletionFunc("file", completeFromReport(func(rep *inspect.Report) []string {
				var out []string
				for _, f := range rep.Files {
					if f.Error == "" {
						out = append(out, f.Key)
					}
				}
				return out
			}))
		}
	}
}

// fixedValues completes one of vals ("value\tdescription").
func fixedValues(vals ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range vals {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeProfiles completes the profile names of the Databricks configuration file
// (DATABRICKS_CONFIG_FILE, else ~/.databrickscfg): its [section] names.
func completeProfiles(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	path := os.Getenv("DATABRICKS_CONFIG_FILE")
	if path == "" {
		path = "~/.databrickscfg"
	}
	if strings.HasPrefix(path, "~") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[1:])
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, name := range databricks.ConfigProfiles(data) {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeFromReport completes from the --from-report file given on the command line (not
// stdin): no listing and no footer is read, so completion stays instant.
func completeFromReport(values func(*inspect.Report) []string) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		path, _ := c.Flags().GetString("from-report")
		if path == "" || path == "-" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		fh, err := os.Open(path)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer fh.Close()
		rep, err := inspect.LoadReport(fh)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, v := range values(rep) {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
