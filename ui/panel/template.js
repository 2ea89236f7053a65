// The sandbox panel's markup, built once per element; panel.js shows,
// hides and fills its parts. One <section> per phase (model.js).

const monitorIcon = `<svg class="icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
  <rect x="2.5" y="3.5" width="19" height="13" rx="1.5"/><path d="M8 20.5h8M12 16.5v4"/></svg>`;

const warningIcon = `<svg class="icon warn" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
  <path d="M12 3 2.5 20h19L12 3z"/><path d="M12 10v4.5M12 17v.5"/></svg>`;

/**
 * @param {string} stylesheet the address of panel.css
 * @returns {string}
 */
export function panelMarkup(stylesheet) {
  return `
<link rel="stylesheet" href="${stylesheet}">
<div class="panel" part="panel">
  <header class="bar">
    <div class="status">
      <span class="badge" data-tone="busy" role="status" aria-label="Sandbox status" aria-live="polite" aria-atomic="true"><span class="dot" aria-hidden="true"></span><span class="label">Connecting…</span></span>
      <span class="project"></span>
      <span class="badge-detail"></span>
    </div>
    <div class="actions">
      <button type="button" class="start" disabled>Start</button>
      <button type="button" class="stop" disabled>Stop</button>
      <details class="open-menu" hidden>
        <summary>Open</summary>
        <div class="open-items" role="group" aria-label="Open on the sandbox's desktop">
          <button type="button" class="open-terminal">Terminal</button>
          <button type="button" class="open-browser" hidden>Browser</button>
        </div>
      </details>
      <span class="open-error" role="alert"></span>
    </div>
    <div class="tools">
      <button type="button" class="switch" role="switch" aria-checked="false" aria-describedby="tools-note" disabled>
        <span class="track" aria-hidden="true"><span class="thumb"></span></span><span class="switch-label">Agent tools</span>
      </button>
      <span id="tools-note" class="note">Takes effect on the agent's next request.</span>
      <span class="tools-error" role="alert"></span>
    </div>
  </header>
  <div class="modebar" hidden>
    <fieldset class="mode">
      <legend class="visually-hidden">Viewer</legend>
      <label><input type="radio" name="mode" value="watch" checked><span>Watch</span></label>
      <label><input type="radio" name="mode" value="control"><span>Take control</span></label>
    </fieldset>
    <span class="mode-note"></span>
    <span class="clipboard-note" role="status" hidden>
      Copied in the sandbox: <q class="clipboard-text"></q>
      <button type="button" class="clipboard-copy">Copy to my clipboard</button>
      <span class="clipboard-written">On your clipboard.</span>
    </span>
  </div>
  <main class="body">
    <div class="stage">
    <section data-phase="connecting" class="message">
      <p class="lead">Connecting to pilot-sandbox…</p>
    </section>
    <section data-phase="lost" class="message" hidden>
      ${warningIcon}
      <h2>Not connected to pilot-sandbox</h2>
      <p class="lost-reason"></p>
      <p class="hint">The panel cannot show, start or stop the sandbox until it is connected again. The sandbox itself is not affected.</p>
    </section>
    <section data-phase="docker" class="message" hidden>
      ${warningIcon}
      <h2>Docker is not available</h2>
      <p class="docker-error"></p>
      <p class="hint">The sandbox runs in Docker. Install Docker Desktop (macOS, Windows) or Docker Engine (Linux), or start it if it is installed. This panel notices when Docker answers.</p>
      <button type="button" class="recheck">Check again</button>
    </section>
    <section data-phase="stopped error paused" class="message" hidden>
      ${monitorIcon}
      <h2>No sandbox running</h2>
      <div class="failure" role="alert" hidden>
        <p class="failure-text"></p>
        <details class="failure-log" hidden><summary>Last lines of its log</summary><pre></pre></details>
      </div>
      <button type="button" class="primary start-sandbox" disabled>Start Sandbox</button>
      <p class="hint">Docker required. The sandbox is a virtual desktop in a Docker container that the agent can see and control.</p>
    </section>
    <section data-phase="approval" class="message" hidden>
      ${warningIcon}
      <h2>This project asks for your approval</h2>
      <p class="approval-lead">Its own files (.pilot/settings.json, its Dockerfile) ask to:</p>
      <p class="approval-summary"></p>
      <div class="approval-detail">
        <div class="approval-warnings" role="alert" hidden>
          <h3>What reaches beyond the project</h3>
          <ul></ul>
        </div>
        <details class="approval-diff" open hidden><summary>Changed since you last approved it</summary><pre></pre></details>
        <details class="approval-content" open hidden><summary>What it asks</summary><pre></pre></details>
        <div class="approval-files"></div>
      </div>
      <p class="hint">A repository may be a stranger's. Approve only what you trust; any change to it asks again.</p>
      <div class="approval-actions">
        <button type="button" class="primary approve">Approve</button>
        <button type="button" class="cancel-approval">Cancel</button>
      </div>
    </section>
    <section data-phase="starting" class="message" hidden>
      ${monitorIcon}
      <h2>Starting the sandbox…</h2>
      <progress class="progress" aria-label="Start progress"></progress>
      <p class="progress-text" aria-live="polite"></p>
      <p class="hint build-note" hidden>The first start builds the sandbox image, which takes a few minutes; later starts take seconds.</p>
    </section>
    <section data-phase="stopping" class="message" hidden>
      ${monitorIcon}
      <h2>Stopping the sandbox…</h2>
      <p class="hint">Its files are kept for the next start.</p>
    </section>
    <section data-phase="running" class="viewer" hidden>
      <div class="frame-slot"></div>
      <div class="overlay" hidden>
        <p class="overlay-text" role="status"></p>
        <button type="button" class="reconnect" hidden>Reconnect</button>
      </div>
    </section>
    </div>
    <aside class="side" aria-label="Questions, tasks, ports and network" hidden>
      <section class="control" aria-label="Control of the desktop" hidden>
        <div class="handover" role="alert" hidden>
          <p>The agent asks you to take over: <span class="handover-reason"></span></p>
          <button type="button" class="primary handover-take">Take over</button>
        </div>
        <p class="control-status" role="status" aria-live="polite"></p>
        <button type="button" class="take-over">Take over</button>
        <button type="button" class="give-back" hidden>Give back</button>
      </section>
      <section class="questions" aria-labelledby="questions-title" hidden>
        <h2 id="questions-title" class="questions-title" aria-live="polite">The sandbox asks</h2>
        <ol class="question-list"></ol>
      </section>
      <details class="tasks" hidden>
        <summary>Tasks</summary>
        <div class="tasks-body">
          <form class="task-form">
            <label>Agent <select name="agent">
              <option value="claude">Claude Code</option>
              <option value="codex">Codex</option>
              <option value="command">Command</option>
            </select></label>
            <label class="task-prompt">Prompt <textarea name="prompt" rows="3"></textarea></label>
            <label class="task-argv" hidden>Command, one argument a line <textarea name="argv" rows="3" spellcheck="false"></textarea></label>
            <button type="submit">Start task</button>
            <p class="hint">It works on a copy of the project in the sandbox; nothing reaches the project until you apply it.</p>
          </form>
          <p class="tasks-error" role="alert"></p>
          <div class="task" hidden>
            <p class="task-title"></p>
            <div class="task-head">
              <span class="task-status" role="status" aria-label="Task status" aria-live="polite"></span>
              <button type="button" class="task-cancel" hidden>Cancel</button>
            </div>
            <ol class="transcript" aria-label="Transcript" tabindex="0"></ol>
            <div class="diff" hidden>
              <h3>Its change</h3>
              <ul class="diff-files"></ul>
              <pre class="diff-patch" tabindex="0" hidden></pre>
              <div class="diff-actions">
                <button type="button" class="task-apply">Apply</button>
                <button type="button" class="task-discard">Discard</button>
              </div>
              <p class="apply-result" role="status"></p>
            </div>
          </div>
        </div>
      </details>
      <details class="activity" hidden>
        <summary>Activity</summary>
        <p class="activity-error" role="alert"></p>
        <p><button type="button" class="export">Export session</button> <span class="export-result" role="status"></span></p>
        <ol class="timeline" aria-label="Timeline, newest first"></ol>
        <dialog class="picture" aria-label="The picture"><button type="button" class="picture-close">Close</button><img alt=""></dialog>
      </details>
      <details class="ports" hidden>
        <summary>Ports</summary>
        <div class="ports-body">
          <p class="ports-error" role="alert"></p>
          <div role="group" aria-labelledby="forwarded-title">
            <h3 id="forwarded-title">This computer's ports in the sandbox</h3>
            <p class="hint">localhost:PORT in the sandbox reaches 127.0.0.1:PORT here, for a dev server you run on this computer. Kept for this project; the agent cannot add one.</p>
            <ul class="forwarded"></ul>
            <form class="forward-form">
              <label>Port in the sandbox <input name="port" type="number" min="1" max="65535" required></label>
              <label>Port here <input name="hostPort" type="number" min="1" max="65535" placeholder="same"></label>
              <button type="submit">Forward</button>
            </form>
          </div>
          <div role="group" aria-labelledby="exposed-title">
            <h3 id="exposed-title">The sandbox's ports on this computer</h3>
            <ul class="exposed"></ul>
            <form class="expose-form">
              <label>Sandbox port to expose <input name="port" type="number" min="1" max="65535" required></label>
              <button type="submit">Expose</button>
            </form>
          </div>
          <div role="group" aria-labelledby="listening-title">
            <h3 id="listening-title">Listening in the sandbox</h3>
            <ul class="listening"></ul>
            <button type="button" class="ports-refresh">Refresh</button>
          </div>
        </div>
      </details>
      <details class="network" hidden>
        <summary><span>Network</span> <span class="preset"></span></summary>
        <div class="network-body">
          <p class="network-error" role="alert"></p>
          <h3 id="kept-title">Your decisions</h3>
          <ul class="kept" aria-labelledby="kept-title"></ul>
          <h3 id="netlog-title">Recent connections</h3>
          <ol class="netlog" aria-labelledby="netlog-title"></ol>
        </div>
      </details>
    </aside>
  </main>
  <details class="recordings" hidden>
    <summary>Recordings</summary>
    <div class="recordings-body">
      <p class="recordings-error" role="alert"></p>
      <button type="button" class="record">Record</button>
      <p class="recordings-empty hint">No recordings of this project yet.</p>
      <ul class="recording-list"></ul>
      <video class="player" controls preload="metadata" hidden></video>
      <div class="marks" aria-label="Marks"></div>
    </div>
  </details>
</div>`;
}
