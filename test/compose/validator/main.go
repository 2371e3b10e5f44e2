// Command compose-validate loads Compose files the way `docker compose config` does, using
// compose-go (the loader inside the docker compose CLI), and prints the normalised model.
//
// It exists so that Herald's docker-compose.yml can be checked on machines that have no
// Docker engine or compose plugin. Interpolation reads the process environment (plus a .env
// file in the project directory, as docker compose does), the compose-spec JSON schema is
// enforced, and the result is normalised, path-resolved and checked for consistency
// (unknown networks, volumes, dependency cycles, ...).
//
//	compose-validate [-format yaml|json] [-project-name NAME] [-project-directory DIR] FILE...
//
// Exit status: 0 and the model on stdout when valid; 1 and the loader's error on stderr when
// not; 2 for bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	flags := flag.NewFlagSet("compose-validate", flag.ContinueOnError)
	format := flags.String("format", "yaml", "output format: yaml or json")
	projectName := flags.String("project-name", "", "project name (default: the file's name: key, else the project directory's name)")
	projectDir := flags.String("project-directory", "", "project directory (default: the first file's directory)")
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: compose-validate [-format yaml|json] [-project-name NAME] [-project-directory DIR] FILE...")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if flags.NArg() == 0 {
		flags.Usage()
		return 2
	}
	if *format != "yaml" && *format != "json" {
		fmt.Fprintf(os.Stderr, "compose-validate: unknown format %q (yaml or json)\n", *format)
		return 2
	}

	optionFns := []cli.ProjectOptionsFn{
		cli.WithWorkingDirectory(*projectDir),
		cli.WithOsEnv,
		cli.WithEnvFiles(),
		cli.WithDotEnv,
		cli.WithName(*projectName),
		cli.WithDefaultProfiles(),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
		cli.WithDiscardEnvFile,
	}
	options, err := cli.NewProjectOptions(flags.Args(), optionFns...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compose-validate: %v\n", err)
		return 1
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "compose-validate: %v\n", err)
		return 1
	}

	var out []byte
	if *format == "json" {
		out, err = project.MarshalJSON()
	} else {
		out, err = project.MarshalYAML()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "compose-validate: cannot render the model: %v\n", err)
		return 1
	}
	if _, err := os.Stdout.Write(out); err != nil {
		return 1
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		fmt.Println()
	}
	return 0
}
