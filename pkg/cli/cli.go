// Package cli gives every fedmesh binary the same command-line contract: --help, --version, structured logs,
// a context that ends on SIGINT/SIGTERM, and a clear message with a non-zero exit on bad flags or failure.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fedmesh/fedmesh/pkg/version"
)

// Exit codes: 1 for a failure while running, 2 for a usage error (bad flags or options).
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks an error the user can fix by changing the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Options is what a binary plugs into the contract: its flags, a check of their values, and its body.
type Options interface {
	// AddFlags registers the binary's flags.
	AddFlags(fs *pflag.FlagSet)
	// Validate reports bad flag values before anything starts.
	Validate() error
	// Run does the binary's work until ctx ends.
	Run(ctx context.Context) error
}

// NewCommand builds the root command of a binary.
func NewCommand(name, short string, opts Options) *cobra.Command {
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:     name,
		Short:   short,
		Version: version.Get().String(),
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return usageError{err}
			}
			logger := zap.New(zap.UseFlagOptions(&zapOpts))
			ctrl.SetLogger(logger)
			klog.SetLogger(logger)
			logger.Info("starting", "binary", name, "version", version.Get().GitVersion)
			return opts.Run(cmd.Context())
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	opts.AddFlags(cmd.Flags())
	logFlags := flag.NewFlagSet(name, flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	cmd.Flags().AddGoFlagSet(logFlags)
	return cmd
}

// Main runs cmd with a context that ends on SIGINT or SIGTERM, and exits with the right code.
func Main(cmd *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cmd.ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(cmd.Name(), err, os.Stderr))
}

func exitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.As(err, new(usageError)) {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return exitFailure
}
