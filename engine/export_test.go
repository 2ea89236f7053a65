package engine

// LogMaxBytes is the most the engine keeps of a container's log on disk:
// logMaxSize times logMaxFiles.
const LogMaxBytes = 5 << 20 * 2
