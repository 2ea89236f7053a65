// Types of the pilot-sandbox protocol (docs/protocol.md), for JSDoc and
// tsc. The server's rpc.discover method returns the same shapes as an
// OpenRPC document generated from its Go types.

/**
 * @typedef {object} DockerStatus
 * @property {boolean} available
 * @property {string} endpoint
 * @property {string} [version]
 * @property {string} [apiVersion]
 * @property {string} [error] what is wrong and what to do, in plain words
 */

/** @typedef {'starting' | 'running' | 'stopping' | 'stopped' | 'error' | 'paused'} SandboxStatus */

/**
 * @typedef {object} SandboxState
 * @property {string} projectPath
 * @property {string} containerId
 * @property {string} containerName
 * @property {string} image
 * @property {'desktop' | 'browser' | 'dockerfile'} [imageVariant] which image it runs (the project's own Dockerfile: "dockerfile")
 * @property {SandboxStatus} status
 * @property {number} wsPort host port of noVNC on 127.0.0.1 (0 unless running)
 * @property {number} vncPort host port of the VNC server on 127.0.0.1
 * @property {string} viewerUrl what the panel's iframe loads to take control
 * @property {string} watchUrl the same desktop, view-only
 * @property {{width: number, height: number}} display
 * @property {number} createdAt milliseconds since the Unix epoch
 * @property {number} [startedAt]
 * @property {string} [error]
 * @property {'none'} [network] no network: its ports are carried by the sidecar
 * @property {boolean} [carried] its ports are the sidecar's relays (no network, or a remote engine): they last while the sidecar runs
 * @property {string} [stopReason] why the lifecycle policy stopped it ("stopped after 30m without activity")
 * @property {number} [diskBytes] its own files, as last measured, when a disk limit is set
 * @property {number} [memoryBytes] the memory a paused sandbox holds
 */

/**
 * What the project's own files ask that needs the user's approval
 * (needs_approval's data.approval).
 * @typedef {object} Approval
 * @property {'dockerfile' | 'limits' | 'network' | 'agents'} kind
 * @property {string} summary what would happen, in plain words
 * @property {string} digest names exactly this content, for sandbox/approve
 * @property {string} [content] the text asked: the Dockerfile, the limits against the caps, the network rules asked
 * @property {ApprovalFile[]} [files] the files a Dockerfile's COPY and ADD take
 * @property {string} [diff] unified diff from the content approved last of this kind
 * @property {string[]} [warnings] what reaches beyond the project, "line N: ..."
 */

/**
 * A file of a Dockerfile's build context, as an approval shows it.
 * @typedef {object} ApprovalFile
 * @property {string} path relative to the project
 * @property {number} size
 * @property {string} [text] its text, when it is short text
 * @property {string} [omitted] why its text is not shown
 */

/**
 * @typedef {object} InitializeResult
 * @property {{name: string, version: string}} serverInfo
 * @property {number} protocolVersion
 * @property {DockerStatus} docker
 */

/**
 * @typedef {object} ExecOptions
 * @property {number} [timeoutMs] 1 to 600000, default 120000
 * @property {string} [workdir] default: the sandbox user's home
 * @property {AbortSignal} [signal] aborting cancels the command's call
 */

/**
 * @typedef {object} ExecResult
 * @property {number} exitCode
 * @property {string} stdout at most 10 MiB
 * @property {string} stderr at most 10 MiB
 * @property {boolean} timedOut
 * @property {boolean} truncated
 */

/**
 * @typedef {object} ScreenshotOptions
 * @property {'png' | 'jpeg'} [format] png (the default) or jpeg
 * @property {number} [quality] 1 to 100 (75 by default); jpeg only
 */

/**
 * @typedef {object} Screenshot
 * @property {'image/png' | 'image/jpeg'} mimeType
 * @property {string} data base64
 * @property {number} width
 * @property {number} height
 */

/**
 * @typedef {object} Tool
 * @property {string} name
 * @property {string} description
 * @property {object} inputSchema a JSON Schema
 */

/**
 * @typedef {{type: 'text', text: string} | {type: 'image', data: string, mimeType: string}} Content
 */

/**
 * @typedef {object} ToolResult
 * @property {Content[]} content
 * @property {boolean} isError
 */

/**
 * @typedef {object} SandboxEvent params of sandbox/event
 * @property {string} projectPath
 * @property {SandboxState | null} state null when the project has no sandbox any more
 */

/**
 * @typedef {object} SandboxProgress params of sandbox/progress
 * @property {string} projectPath
 * @property {'image' | 'create' | 'start' | 'ready' | 'copy' | 'sync'} stage copy: an upload or download; sync: the project into /workspace (current and total in bytes)
 * @property {string} message
 * @property {number} [current]
 * @property {number} [total]
 */

/**
 * @typedef {object} WriteFileOptions
 * @property {number} [mode] permission bits, e.g. 0o644; an existing file keeps its own when left out
 * @property {boolean} [createParents] make the missing directories on the way
 */

/**
 * @typedef {object} ReadFileResult
 * @property {string} data base64, at most 10 MiB
 * @property {number} size the whole file's size
 * @property {boolean} eof the data reaches the end of the file
 */

/**
 * @typedef {object} FileEntry
 * @property {string} name
 * @property {'file' | 'dir' | 'symlink' | 'other'} type
 * @property {number} size a file's length, a link's target's, 0 for a directory
 * @property {number} mode Unix permission bits
 * @property {number} modifiedAt milliseconds since the epoch, to the second
 */

/**
 * @typedef {object} Copied
 * @property {number} files files and links copied
 * @property {number} bytes bytes of the files
 */

/**
 * @typedef {object} ForwardedPort a host port reached from the sandbox
 * @property {number} port localhost:port in the sandbox
 * @property {number} hostPort the host's 127.0.0.1:hostPort
 * @property {string} [error] why it is not in effect in the running sandbox
 */

/**
 * @typedef {object} ExposedPort a sandbox port answering on the host
 * @property {number} port
 * @property {number} hostPort
 * @property {string} url http://127.0.0.1:hostPort/, for a preview
 */

/**
 * @typedef {object} ListeningPort a TCP port something listens on in the sandbox
 * @property {number} port
 * @property {string} [process] the listener's command name, when known
 */

/**
 * @typedef {object} PortsList
 * @property {ForwardedPort[]} forwarded
 * @property {ExposedPort[]} exposed
 * @property {ListeningPort[]} listening
 */

/**
 * A question only the user may answer (sandbox/permission).
 * @typedef {object} PermissionRequest
 * @property {string} id
 * @property {string} projectPath
 * @property {'network' | 'expose' | 'limits'} kind
 * @property {string} rule what an answer for the session or always keeps (example.org:443)
 * @property {string} summary in plain words
 * @property {any} detail for network: {host, port, protocol, sni?, process?: {pid, command}}
 * @property {{tool?: string, requestId?: string, exec?: string, task?: string, browser?: string}} [cause]
 * @property {number} expiresAt when it is denied with the reason "no answer"
 */

/**
 * How a question ended (sandbox/permission/resolved).
 * @typedef {object} PermissionResolved
 * @property {string} id
 * @property {string} projectPath
 * @property {'allow_once' | 'allow_session' | 'allow_always' | 'deny'} decision
 * @property {string} by user, timeout, or the policy (rule, preset, fixed)
 * @property {string} [reason]
 */

/**
 * A decision kept for a project (always) or made for the session.
 * @typedef {object} KeptDecision
 * @property {string} kind
 * @property {string} rule
 * @property {'allow' | 'deny'} decision
 * @property {'kept' | 'session'} source
 * @property {string} [reason]
 * @property {number} decidedAt
 */

/**
 * One connection of a project's log (sandbox/network/log).
 * @typedef {object} NetworkLogEntry
 * @property {number} time
 * @property {string} host
 * @property {number} port
 * @property {string} protocol
 * @property {'allow' | 'deny'} decision
 * @property {string} by rule, preset, user, timeout or fixed
 * @property {string} [rule]
 * @property {string} [reason]
 * @property {number} bytesIn
 * @property {number} bytesOut
 * @property {any} [cause]
 * @property {any} [process]
 */

/**
 * What a sync did (sandbox/workspace/sync).
 * @typedef {object} WorkspaceSync
 * @property {number} files the project's files, as /workspace now holds them
 * @property {number} bytes
 * @property {boolean} changed a new base was committed
 * @property {string} base the commit of the snapshot
 * @property {number} sent
 * @property {number} sentBytes
 * @property {number} removed
 * @property {string} [saved] the ref keeping changes no task saved
 */

/**
 * A task (sandbox/tasks/*).
 * @typedef {object} Task
 * @property {string} taskId
 * @property {string} projectPath
 * @property {'claude' | 'codex' | 'command'} agent
 * @property {string} [prompt]
 * @property {string[]} argv
 * @property {string} timeout
 * @property {string} container
 * @property {string} base
 * @property {'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost'} status
 * @property {number} startedAt Unix milliseconds
 * @property {number} events how many events it had
 * @property {number} [finishedAt]
 * @property {any} [finished] its finished event's fields
 */

/**
 * A recording of a sandbox's desktop (docs/protocol.md, Recording).
 * @typedef {object} Recording
 * @property {string} recordingId
 * @property {string} projectPath
 * @property {string} containerName
 * @property {string} path the WebM file on the user's machine
 * @property {string} mimeType
 * @property {number} fps
 * @property {'recording' | 'stopped' | 'ended'} state
 * @property {string} [reason] why it ended by itself
 * @property {number} startedAt Unix milliseconds
 * @property {number} [endedAt]
 * @property {number} durationMs
 * @property {number} bytes
 */

/**
 * One event of a task: type, timeMs and the type's fields (docs/protocol.md, Tasks).
 * @typedef {{type: 'started' | 'text' | 'tool' | 'toolResult' | 'line' | 'usage' | 'finished', timeMs: number, [field: string]: any}} TaskEvent
 */

/**
 * A task's change (sandbox/tasks/diff).
 * @typedef {object} TaskDiff
 * @property {string} base
 * @property {{path: string, status: 'added' | 'modified' | 'deleted' | 'typechange', additions: number, deletions: number, binary: boolean}[]} files
 * @property {string} patch
 * @property {boolean} patchTruncated
 */

/**
 * @typedef {object} TaskStartOptions
 * @property {'claude' | 'codex' | 'command'} agent
 * @property {string} [prompt]
 * @property {string[]} [command]
 * @property {Record<string, string>} [env]
 * @property {string} [timeout] a duration: 30m (the default), 2h
 * @property {boolean} [sync] false: start on /workspace as it is
 */

/**
 * @typedef {object} RequestOptions
 * @property {AbortSignal} [signal] aborting sends $/cancelRequest and rejects with the signal's reason
 */

/**
 * A way to carry JSON-RPC messages: stdio with Content-Length framing
 * (node.js) or a WebSocket (websocket.js).
 *
 * @typedef {object} Transport
 * @property {(message: object) => void} send
 * @property {(onMessage: (message: any) => void, onClose: (error?: Error) => void) => void} listen
 * @property {() => void} close
 */

/**
 * One entry of a sandbox's timeline (docs/activity.md).
 * @typedef {object} ActivityEntry
 * @property {number} seq 1, 2, 3… per project, in order
 * @property {number} time Unix milliseconds
 * @property {string} projectPath
 * @property {'rpc' | 'mcp' | 'task' | 'user'} source
 * @property {string} [client] an MCP client's name, or a task's id
 * @property {'tool' | 'exec' | 'permission' | 'task' | 'lifecycle'} kind
 * @property {string} name
 * @property {string} summary arguments and answer in short
 * @property {number} durationMs
 * @property {boolean} isError
 * @property {string} [before] JPEG thumbnail, base64, before an acting tool
 * @property {string} [after] JPEG thumbnail, base64, after it
 */

/**
 * Who holds a project's desktop (the notification sandbox/control too).
 * @typedef {object} ControlState
 * @property {string} projectPath
 * @property {'agent' | 'user'} holder
 * @property {string} [reason] what the agent asked the user to do (sandbox_wait handOver)
 */

export {};
