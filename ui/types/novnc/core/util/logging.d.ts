// noVNC's core/util/logging.js, for tsc (see ../rfb.d.ts).
export function initLogging(level?: 'debug' | 'info' | 'warn' | 'error' | 'none' | string): void;
