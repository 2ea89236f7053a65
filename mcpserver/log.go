package mcpserver

import (
	"context"
	"log/slog"

	"github.com/rs/zerolog"
)

// sdkLogger is the SDK's logger, into ours: its info messages (every
// connection made and ended) go in at debug, which -v shows.
func sdkLogger(log zerolog.Logger) *slog.Logger {
	return slog.New(quieter{zerolog.NewSlogHandler(log)})
}

type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, level slog.Level) bool {
	return q.Handler.Enabled(ctx, lower(level))
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return q.Handler.Handle(ctx, r)
}

func (q quieter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(attrs)}
}

func (q quieter) WithGroup(name string) slog.Handler { return quieter{q.Handler.WithGroup(name)} }

func lower(level slog.Level) slog.Level {
	if level == slog.LevelInfo {
		return slog.LevelDebug
	}
	return level
}
