// A client of the pilot-sandbox protocol (docs/protocol.md) for the desktop
// app: typed methods for every request, subscriptions to the server's
// notifications, and errors that carry the protocol's code and kind. It has
// no dependencies and runs anywhere a transport does: Node or Electron's
// main process over stdio (node.js), a browser over WebSocket
// (websocket.js).

/** @typedef {import('./types.js').Transport} Transport */
/** @typedef {import('./types.js').RequestOptions} RequestOptions */
/** @typedef {import('./types.js').DockerStatus} DockerStatus */
/** @typedef {import('./types.js').SandboxState} SandboxState */
/** @typedef {import('./types.js').InitializeResult} InitializeResult */
/** @typedef {import('./types.js').Approval} Approval */
/** @typedef {import('./types.js').ExecOptions} ExecOptions */
/** @typedef {import('./types.js').ExecResult} ExecResult */
/** @typedef {import('./types.js').Screenshot} Screenshot */
/** @typedef {import('./types.js').ScreenshotOptions} ScreenshotOptions */
/** @typedef {import('./types.js').Tool} Tool */
/** @typedef {import('./types.js').ToolResult} ToolResult */
/** @typedef {import('./types.js').SandboxEvent} SandboxEvent */
/** @typedef {import('./types.js').SandboxProgress} SandboxProgress */
/** @typedef {import('./types.js').WriteFileOptions} WriteFileOptions */
/** @typedef {import('./types.js').ReadFileResult} ReadFileResult */
/** @typedef {import('./types.js').FileEntry} FileEntry */
/** @typedef {import('./types.js').Copied} Copied */
/** @typedef {import('./types.js').ForwardedPort} ForwardedPort */
/** @typedef {import('./types.js').ExposedPort} ExposedPort */
/** @typedef {import('./types.js').PortsList} PortsList */
/** @typedef {import('./types.js').PermissionRequest} PermissionRequest */
/** @typedef {import('./types.js').PermissionResolved} PermissionResolved */
/** @typedef {import('./types.js').WorkspaceSync} WorkspaceSync */
/** @typedef {import('./types.js').ActivityEntry} ActivityEntry */
/** @typedef {import('./types.js').ControlState} ControlState */
/** @typedef {import('./types.js').Task} Task */
/** @typedef {import('./types.js').TaskEvent} TaskEvent */
/** @typedef {import('./types.js').TaskDiff} TaskDiff */
/** @typedef {import('./types.js').TaskStartOptions} TaskStartOptions */
/** @typedef {import('./types.js').KeptDecision} KeptDecision */
/** @typedef {import('./types.js').NetworkLogEntry} NetworkLogEntry */
/** @typedef {import('./types.js').Recording} Recording */

/** The protocol version this client speaks. */
export const PROTOCOL_VERSION = 1;

/**
 * An error answered by the server. `kind` is the stable string to switch
 * on (docs/protocol.md, Errors); `field` names the bad param of an
 * invalid_params error; `log` holds the last lines of a failed image build
 * or start; `running` lists the sandboxes that run, for too_many_sandboxes;
 * `approval` is what needs_approval asks the user ({kind, summary, digest,
 * content, files?, diff?, warnings?}).
 */
export class RpcError extends Error {
  /**
   * @param {number} code
   * @param {string} message
   * @param {any} [data]
   */
  constructor(code, message, data) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    /** @type {Record<string, any>} */
    this.data = data && typeof data === 'object' ? data : {};
    /** @type {string} */
    this.kind = typeof this.data.kind === 'string' ? this.data.kind : '';
    /** @type {string | undefined} */
    this.field = this.data.field;
    /** @type {string[] | undefined} */
    this.log = this.data.log;
    /** @type {{projectPath: string, containerId?: string, containerName: string}[] | undefined} */
    this.running = this.data.running;
    /** @type {Approval | undefined} */
    this.approval = this.data.approval;
  }
}

/** The connection to the server closed before the answer came. */
export class ConnectionClosedError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'ConnectionClosedError';
  }
}

/**
 * @typedef {object} Pending
 * @property {(value: any) => void} resolve
 * @property {(error: Error) => void} reject
 * @property {string} method
 */

export class Client {
  /** @param {Transport} transport */
  constructor(transport) {
    this.transport = transport;
    this.nextId = 1;
    /** @type {Map<number, Pending>} */
    this.pending = new Map();
    /** @type {Map<string, Set<(params: any) => void>>} */
    this.handlers = new Map();
    /** @type {Set<(error?: Error) => void>} */
    this.closeHandlers = new Set();
    /** @type {Error | null} why the connection closed, once it has */
    this.closedBy = null;
    transport.listen(
      (message) => this.receive(message),
      (error) => this.closed(error),
    );
  }

  /**
   * Sends a request and resolves with its result, or rejects with an
   * RpcError (or ConnectionClosedError).
   *
   * @param {string} method
   * @param {object} [params]
   * @param {RequestOptions} [options]
   * @returns {Promise<any>}
   */
  request(method, params, options = {}) {
    if (this.closedBy) return Promise.reject(this.closedBy);
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (!this.pending.delete(id)) return;
        this.notify('$/cancelRequest', { id });
        reject(signal?.reason);
      };
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        method,
        resolve: (value) => { done(); resolve(value); },
        reject: (error) => { done(); reject(error); },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.transport.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    });
  }

  /**
   * Sends a notification.
   *
   * @param {string} method
   * @param {object} [params]
   */
  notify(method, params) {
    if (this.closedBy) return;
    this.transport.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) });
  }

  /**
   * Calls handler with the params of every notification of method, until
   * the returned function is called.
   *
   * @param {string} method
   * @param {(params: any) => void} handler
   * @returns {() => void} unsubscribe
   */
  on(method, handler) {
    let set = this.handlers.get(method);
    if (!set) this.handlers.set(method, (set = new Set()));
    set.add(handler);
    return () => { set.delete(handler); };
  }

  /**
   * sandbox/event: a sandbox's state changed (any project's: filter by
   * projectPath). state is null when the project has no sandbox any more.
   *
   * @param {(event: SandboxEvent) => void} handler
   * @returns {() => void} unsubscribe
   */
  onEvent(handler) { return this.on('sandbox/event', handler); }

  /**
   * sandbox/progress: a start or image build made progress.
   *
   * @param {(progress: SandboxProgress) => void} handler
   * @returns {() => void} unsubscribe
   */
  onProgress(handler) { return this.on('sandbox/progress', handler); }

  /**
   * Output of an exec that gave an outputToken, as it comes.
   *
   * @param {(output: {projectPath: string, token: string | number, stream: 'stdout' | 'stderr', data: string}) => void} handler
   * @returns {() => void} ends the subscription
   */
  onOutput(handler) { return this.on('sandbox/output', handler); }

  /**
   * sandbox/permission: a question only the user may answer (any
   * project's); answer it with answerPermission before its expiresAt.
   *
   * @param {(question: PermissionRequest) => void} handler
   * @returns {() => void} unsubscribe
   */
  onPermission(handler) { return this.on('sandbox/permission', handler); }

  /**
   * sandbox/permission/resolved: a question ended (answered here or
   * elsewhere, settled by the policy, expired, its sandbox stopped).
   *
   * @param {(resolved: PermissionResolved) => void} handler
   * @returns {() => void} unsubscribe
   */
  onPermissionResolved(handler) { return this.on('sandbox/permission/resolved', handler); }

  /**
   * sandbox/network: a new entry of a watched project's connection log
   * (networkLog with watch).
   *
   * @param {(notice: {projectPath: string, entry: NetworkLogEntry}) => void} handler
   * @returns {() => void} unsubscribe
   */
  onNetwork(handler) { return this.on('sandbox/network', handler); }

  /**
   * sandbox/task: an event of a task (every project's), in order for each
   * task; seq numbers a task's events from 1 (a seq seen again after a
   * sidecar restart is the same event).
   *
   * @param {(notice: {taskId: string, projectPath: string, seq: number, event: TaskEvent}) => void} handler
   * @returns {() => void} unsubscribe
   */
  onTask(handler) { return this.on('sandbox/task', handler); }

  /**
   * Called once when the connection closes, with the reason if it failed.
   *
   * @param {(error?: Error) => void} handler
   * @returns {() => void} unsubscribe
   */
  onClose(handler) {
    this.closeHandlers.add(handler);
    return () => { this.closeHandlers.delete(handler); };
  }

  /** Closes the connection; pending requests reject. */
  close() {
    this.transport.close();
    this.closed();
  }

  /** @param {any} message */
  receive(message) {
    if (!message || typeof message !== 'object') return;
    if (typeof message.method === 'string') {
      if (message.id !== undefined) {
        // The server makes no requests; answer as JSON-RPC asks.
        this.transport.send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'the client serves no methods' } });
        return;
      }
      for (const handler of this.handlers.get(message.method) ?? []) handler(message.params);
      return;
    }
    const call = this.pending.get(message.id);
    if (!call) return; // answered after a cancel, or not ours
    this.pending.delete(message.id);
    if (message.error) {
      const { code, message: text, data } = message.error;
      call.reject(new RpcError(code, `${call.method}: ${text}`, data));
    } else {
      call.resolve(message.result);
    }
  }

  /** @param {Error} [error] */
  closed(error) {
    if (this.closedBy) return;
    this.closedBy = new ConnectionClosedError(`the connection to pilot-sandbox closed${error ? `: ${error.message}` : ''}`);
    for (const call of this.pending.values()) call.reject(this.closedBy);
    this.pending.clear();
    for (const handler of this.closeHandlers) handler(error);
  }

  // The protocol's methods, typed.

  /**
   * @param {{name: string, version: string}} [clientInfo]
   * @returns {Promise<InitializeResult>}
   */
  initialize(clientInfo) { return this.request('initialize', clientInfo ? { clientInfo } : {}); }

  /** Ends the session; afterwards only exit is accepted. Sandboxes keep running. */
  async shutdown() { await this.request('shutdown'); }

  /** Asks the server to exit (with 0 after shutdown). */
  exit() { this.notify('exit'); }

  /** @returns {Promise<DockerStatus>} */
  dockerStatus() { return this.request('docker/status', {}); }

  /**
   * Starts (or creates) the project's sandbox; resolves once its desktop
   * answers. Progress comes as sandbox/progress meanwhile.
   *
   * @param {string} projectPath an absolute path to an existing directory
   * @param {RequestOptions} [options]
   * @returns {Promise<SandboxState>}
   */
  start(projectPath, options) { return this.request('sandbox/start', { projectPath }, options); }

  /**
   * Records the user's approval of what the project's own files ask (a
   * Dockerfile to build, limits above the caps), named by the digest a
   * needs_approval error's `approval` gave. Call it only on the user's
   * say-so: it is what stands between a stranger's repository and a build
   * as root.
   *
   * @param {string} projectPath
   * @param {string} digest
   * @returns {Promise<{approved: boolean}>}
   */
  approve(projectPath, digest) { return this.request('sandbox/approve', { projectPath, digest }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<SandboxState>}
   */
  stop(projectPath) { return this.request('sandbox/stop', { projectPath }); }

  /**
   * Freezes the running sandbox with every window kept; start resumes it.
   *
   * @param {string} projectPath
   * @returns {Promise<SandboxState>}
   */
  pause(projectPath) { return this.request('sandbox/pause', { projectPath }); }

  /**
   * The app closed the project: its running sandbox is paused, or stopped
   * when config.json says closeAction "stop"; null when it has none.
   *
   * @param {string} projectPath
   * @returns {Promise<SandboxState | null>}
   */
  closeSandbox(projectPath) { return this.request('sandbox/close', { projectPath }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<{removed: boolean}>}
   */
  remove(projectPath) { return this.request('sandbox/remove', { projectPath }); }

  /**
   * Removes a sandbox by its container, whatever became of its project.
   * @param {string} containerId
   * @returns {Promise<{removed: boolean}>}
   */
  removeContainer(containerId) { return this.request('sandbox/remove', { containerId }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<SandboxState | null>}
   */
  status(projectPath) { return this.request('sandbox/status', { projectPath }); }

  /** @returns {Promise<{sandboxes: SandboxState[]}>} */
  list() { return this.request('sandbox/list', {}); }

  /**
   * Runs command under bash -lc in the running sandbox. A non-zero exit
   * is a result, not an error.
   *
   * @param {string} projectPath
   * @param {string} command
   * @param {ExecOptions} [options]
   * @returns {Promise<ExecResult>}
   */
  exec(projectPath, command, options = {}) {
    const { signal, timeoutMs, workdir } = options;
    /** @type {Record<string, unknown>} */
    const params = { projectPath, command };
    if (timeoutMs !== undefined) params.timeoutMs = timeoutMs;
    if (workdir !== undefined) params.workdir = workdir;
    return this.request('sandbox/exec', params, { signal });
  }

  /**
   * The whole display at its full size, as a PNG or, with format 'jpeg',
   * a JPEG (quality 1 to 100, 75 by default).
   *
   * @param {string} projectPath
   * @param {ScreenshotOptions} [options]
   * @returns {Promise<Screenshot>}
   */
  screenshot(projectPath, options = {}) {
    const { format, quality } = options;
    /** @type {Record<string, unknown>} */
    const params = { projectPath };
    if (format !== undefined) params.format = format;
    if (quality !== undefined) params.quality = quality;
    return this.request('sandbox/screenshot', params);
  }

  /**
   * Starts command under bash -lc in the running sandbox in the
   * background and answers at once; it runs until it ends or kill ends it.
   *
   * @param {string} projectPath
   * @param {string} command
   * @param {{workdir?: string}} [options]
   * @returns {Promise<{pid: number, logPath: string}>} logPath: its output, in the sandbox
   */
  execBackground(projectPath, command, options = {}) {
    return this.request('sandbox/exec', { projectPath, command, background: true, ...options });
  }

  /**
   * The processes started in the background (exec with background: true).
   *
   * @param {string} projectPath
   * @returns {Promise<{processes: {pid: number, command: string, startedAt: number}[]}>}
   */
  processes(projectPath) { return this.request('sandbox/processes', { projectPath }); }

  /**
   * Ends a background process and its children.
   *
   * @param {string} projectPath
   * @param {number} pid
   * @returns {Promise<any>}
   */
  kill(projectPath, pid) { return this.request('sandbox/kill', { projectPath, pid }); }

  /**
   * Makes the sandbox's port (even one bound to its own 127.0.0.1) answer
   * on a host 127.0.0.1 port, for a preview in the user's browser.
   *
   * @param {string} projectPath
   * @param {number} port
   * @returns {Promise<ExposedPort>}
   */
  exposePort(projectPath, port) { return this.request('sandbox/ports/expose', { projectPath, port }); }

  /**
   * Makes localhost:port in the sandbox reach the host's
   * 127.0.0.1:hostPort (the same number when left out), now and at every
   * start: the user's decision, kept in the user's own state.
   *
   * @param {string} projectPath
   * @param {number} port
   * @param {number} [hostPort]
   * @returns {Promise<ForwardedPort>}
   */
  forwardPort(projectPath, port, hostPort) {
    return this.request('sandbox/ports/forward', { projectPath, port, ...(hostPort === undefined ? {} : { hostPort }) });
  }

  /**
   * The forwarded and exposed ports, and what listens inside now.
   *
   * @param {string} projectPath
   * @param {{skipListening?: boolean}} [options] skipListening: leave out
   *   what listens (a command in the sandbox, seconds under load), the
   *   rest comes at once
   * @returns {Promise<PortsList>}
   */
  listPorts(projectPath, options = {}) { return this.request('sandbox/ports/list', { projectPath, ...options }); }

  /**
   * Ends a forwarded or an exposed port.
   *
   * @param {string} projectPath
   * @param {number} port
   * @param {'forwarded' | 'exposed'} direction
   * @returns {Promise<{closed: boolean}>}
   */
  closePort(projectPath, port, direction) { return this.request('sandbox/ports/close', { projectPath, port, direction }); }

  /**
   * Answers a question sandbox/permission asked.
   *
   * @param {string} id
   * @param {'allow_once' | 'allow_session' | 'allow_always' | 'deny'} decision
   * @param {{reason?: string, always?: boolean}} [options] always keeps a deny
   * @returns {Promise<{}>}
   */
  answerPermission(id, decision, options = {}) { return this.request('sandbox/permission/answer', { id, decision, ...options }); }

  /**
   * The project's questions waiting, and its kept and session decisions.
   *
   * @param {string} projectPath
   * @returns {Promise<{pending: PermissionRequest[], rules: KeptDecision[]}>}
   */
  listPermissions(projectPath) { return this.request('sandbox/permission/list', { projectPath }); }

  /**
   * Removes a kept decision: the next connection is asked again.
   *
   * @param {string} projectPath
   * @param {string} rule
   * @returns {Promise<{forgotten: number}>}
   */
  forgetPermission(projectPath, rule) { return this.request('sandbox/permission/forget', { projectPath, rule }); }

  /**
   * The network policy in force for the project, each part with where it
   * came from.
   *
   * @param {string} projectPath
   * @returns {Promise<any>}
   */
  networkPolicy(projectPath) { return this.request('sandbox/network/policy', { projectPath }); }

  /**
   * The project's last connections; with watch, new ones come as
   * sandbox/network (onNetwork).
   *
   * @param {string} projectPath
   * @param {{limit?: number, watch?: boolean}} [options]
   * @returns {Promise<{entries: NetworkLogEntry[]}>}
   */
  networkLog(projectPath, options = {}) { return this.request('sandbox/network/log', { projectPath, ...options }); }

  /**
   * Makes the sandbox's /workspace hold the project's files as they are
   * now (only what changed crosses), with sandbox/progress stage sync.
   *
   * @param {string} projectPath
   * @returns {Promise<WorkspaceSync>}
   */
  syncWorkspace(projectPath) { return this.request('sandbox/workspace/sync', { projectPath }); }

  /**
   * Starts a task in the running sandbox (syncing first unless sync is
   * false); resolves once its program started. Its events come as
   * sandbox/task (onTask).
   *
   * @param {string} projectPath
   * @param {TaskStartOptions} options
   * @returns {Promise<{taskId: string, task: Task}>}
   */
  startTask(projectPath, options) { return this.request('sandbox/tasks/start', { projectPath, ...options }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<{tasks: Task[]}>} newest first
   */
  listTasks(projectPath) { return this.request('sandbox/tasks/list', { projectPath }); }

  /**
   * The project's timeline (docs/activity.md), oldest first: with since,
   * the entries after it; else the newest; with from/to (Unix ms), those
   * of that time, oldest first; brief leaves out the thumbnails. New
   * entries also come as the notification sandbox/activity.
   *
   * @param {string} projectPath
   * @param {{since?: number, limit?: number, from?: number, to?: number, brief?: boolean}} [options] limit 1..100 (100)
   * @returns {Promise<{entries: ActivityEntry[]}>}
   */
  activity(projectPath, options = {}) { return this.request('sandbox/activity', { projectPath, ...options }); }

  /**
   * Writes the project's session into a new folder (docs/activity.md,
   * Export): actions.jsonl, screens/, recordings/.
   *
   * @param {string} projectPath
   * @param {{dir?: string, from?: number, to?: number}} [options] dir: a new folder (absolute); left out, one under the user's state
   * @returns {Promise<{dir: string, entries: number, screens: number, recordings: string[]}>}
   */
  exportActivity(projectPath, options = {}) { return this.request('sandbox/activity/export', { projectPath, ...options }); }

  /**
   * Who holds the project's desktop, and an agent's handOver reason
   * waiting for the user.
   *
   * @param {string} projectPath
   * @returns {Promise<ControlState>}
   */
  controlState(projectPath) { return this.request('sandbox/control/get', { projectPath }); }

  /**
   * The user takes the project's desktop: the agent's clicks and keys are
   * refused until releaseControl, or until this connection closes.
   *
   * @param {string} projectPath
   * @returns {Promise<ControlState>}
   */
  takeControl(projectPath) { return this.request('sandbox/control/take', { projectPath }); }

  /**
   * The user gives the desktop back to the agent.
   *
   * @param {string} projectPath
   * @returns {Promise<ControlState>}
   */
  releaseControl(projectPath) { return this.request('sandbox/control/release', { projectPath }); }

  /**
   * A task and its events so far.
   *
   * @param {string} taskId
   * @returns {Promise<{task: Task, events: TaskEvent[], droppedEvents: number}>}
   */
  getTask(taskId) { return this.request('sandbox/tasks/get', { taskId }); }

  /**
   * Ends a running task and everything it started; resolves once it ended.
   *
   * @param {string} taskId
   * @returns {Promise<{task: Task}>}
   */
  cancelTask(taskId) { return this.request('sandbox/tasks/cancel', { taskId }); }

  /**
   * Records the running sandbox's desktop (WebM) into a file on the
   * user's machine; resolves with its id once it records (a sandbox that
   * records already gives that recording's id).
   *
   * @param {string} projectPath
   * @param {{fps?: number}} [options] fps 1 to 30 (5)
   * @returns {Promise<{recordingId: string}>}
   */
  startRecording(projectPath, options = {}) { return this.request('sandbox/recording/start', { projectPath, ...options }); }

  /**
   * Ends a recording; resolves once its file is complete.
   *
   * @param {string} recordingId
   * @returns {Promise<{path: string, durationMs: number, bytes: number, recording: Recording}>}
   */
  stopRecording(recordingId) { return this.request('sandbox/recording/stop', { recordingId }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<{recordings: Recording[]}>} newest first
   */
  listRecordings(projectPath) { return this.request('sandbox/recording/list', { projectPath }); }

  /**
   * An ended task's change against its base.
   *
   * @param {string} taskId
   * @returns {Promise<TaskDiff>}
   */
  diffTask(taskId) { return this.request('sandbox/tasks/diff', { taskId }); }

  /**
   * Writes an ended task's change (or the paths named) into the project;
   * rejects with kind conflict (data.paths) and writes nothing if the user
   * changed one of its files since the task's base.
   *
   * @param {string} taskId
   * @param {string[]} [paths]
   * @returns {Promise<{applied: string[]}>}
   */
  applyTask(taskId, paths) { return this.request('sandbox/tasks/apply', paths ? { taskId, paths } : { taskId }); }

  /**
   * Drops an ended task's change and puts /workspace back to its base.
   *
   * @param {string} taskId
   * @returns {Promise<{}>}
   */
  discardTask(taskId) { return this.request('sandbox/tasks/discard', { taskId }); }

  /**
   * The address of the sandbox's Chromium DevTools Protocol, for
   * Playwright's connectOverCDP or Puppeteer's connect.
   *
   * @param {string} projectPath
   * @returns {Promise<{wsEndpoint: string}>}
   */
  browser(projectPath) { return this.request('sandbox/browser', { projectPath }); }

  /**
   * Writes a whole file (at most 10 MiB) in the sandbox, running or
   * stopped; a string is written as UTF-8 text, bytes as they are.
   * Paths are absolute or relative to /home/sandbox.
   *
   * @param {string} projectPath
   * @param {string} path
   * @param {string | Uint8Array} content
   * @param {WriteFileOptions} [options]
   * @returns {Promise<{path: string, size: number}>}
   */
  writeFile(projectPath, path, content, options = {}) {
    /** @type {Record<string, unknown>} */
    const params = { projectPath, path, ...options };
    if (typeof content === 'string') params.text = content;
    else params.data = bytesToBase64(content);
    return this.request('sandbox/files/write', params);
  }

  /**
   * Reads at most length bytes (10 MiB by default and at most) of a file
   * from offset on.
   *
   * @param {string} projectPath
   * @param {string} path
   * @param {{offset?: number, length?: number}} [range]
   * @returns {Promise<ReadFileResult>}
   */
  readFile(projectPath, path, range = {}) { return this.request('sandbox/files/read', { projectPath, path, ...range }); }

  /**
   * @param {string} projectPath
   * @param {string} path
   * @returns {Promise<{entries: FileEntry[], truncated: boolean}>}
   */
  listFiles(projectPath, path) { return this.request('sandbox/files/list', { projectPath, path }); }

  /**
   * @param {string} projectPath
   * @param {string} path
   * @returns {Promise<FileEntry | null>} null when nothing is there
   */
  statFile(projectPath, path) { return this.request('sandbox/files/stat', { projectPath, path }); }

  /**
   * @param {string} projectPath
   * @param {string} path
   * @returns {Promise<{path: string}>}
   */
  mkdir(projectPath, path) { return this.request('sandbox/files/mkdir', { projectPath, path }); }

  /**
   * Needs a running sandbox.
   *
   * @param {string} projectPath
   * @param {string} path
   * @param {{recursive?: boolean}} [options]
   * @returns {Promise<{removed: boolean}>}
   */
  removeFile(projectPath, path, options = {}) { return this.request('sandbox/files/remove', { projectPath, path, ...options }); }

  /**
   * Copies a host file or tree into the sandbox, to be path.
   *
   * @param {string} projectPath
   * @param {string} hostPath absolute
   * @param {string} path
   * @param {RequestOptions} [options]
   * @returns {Promise<Copied>}
   */
  upload(projectPath, hostPath, path, options = {}) {
    return this.request('sandbox/files/upload', { projectPath, hostPath, path }, options);
  }

  /**
   * Copies a file or tree of the sandbox to be hostPath; never outside it.
   *
   * @param {string} projectPath
   * @param {string} path
   * @param {string} hostPath absolute; its directory must exist
   * @param {{overwrite?: boolean, signal?: AbortSignal}} [options]
   * @returns {Promise<Copied>}
   */
  download(projectPath, path, hostPath, options = {}) {
    const { signal, overwrite } = options;
    /** @type {Record<string, unknown>} */
    const params = { projectPath, path, hostPath };
    if (overwrite !== undefined) params.overwrite = overwrite;
    return this.request('sandbox/files/download', params, { signal });
  }

  /**
   * @param {string} projectPath
   * @param {boolean} enabled
   * @returns {Promise<{enabled: boolean}>}
   */
  setToolsEnabled(projectPath, enabled) { return this.request('sandbox/setToolsEnabled', { projectPath, enabled }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<{enabled: boolean}>}
   */
  getToolsEnabled(projectPath) { return this.request('sandbox/getToolsEnabled', { projectPath }); }

  /**
   * The app closed the project: its sandbox is stopped and kept.
   *
   * @param {string} projectPath
   * @returns {Promise<SandboxState | null>}
   */
  closeProject(projectPath) { return this.request('project/close', { projectPath }); }

  /**
   * @param {string} projectPath
   * @returns {Promise<{tools: Tool[]}>}
   */
  listTools(projectPath) { return this.request('tools/list', { projectPath }); }

  /**
   * @param {string} projectPath
   * @param {string} name
   * @param {Record<string, unknown>} [args]
   * @param {RequestOptions} [options]
   * @returns {Promise<ToolResult>}
   */
  callTool(projectPath, name, args = {}, options = {}) {
    return this.request('tools/call', { projectPath, name, arguments: args }, options);
  }

  /**
   * The protocol as an OpenRPC document, generated by the server.
   *
   * @returns {Promise<Record<string, any>>}
   */
  discover() { return this.request('rpc.discover'); }
}

/**
 * Base64 of bytes, in Node and in browsers alike.
 *
 * @param {Uint8Array} bytes
 * @returns {string}
 */
function bytesToBase64(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
