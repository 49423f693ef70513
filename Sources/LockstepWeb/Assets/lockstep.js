// Lockstep's JavaScript SDK: one ES module, served by the agent (lockstepd --web) at /lockstep.js.
// A page becomes a player of that agent, like the Swift and Python SDKs (docs/sdk.md):
//
//   import { LockstepConnection, HostClock, PlaybackCoordinator, MediaElementPlayer } from "/lockstep.js";
//   const connection = await LockstepConnection.open();
//   const clock = new HostClock(connection); clock.start();
//   const coordinator = new PlaybackCoordinator(connection, clock, { name: "phone" });
//   await coordinator.connect();
//   new MediaElementPlayer(coordinator, document.querySelector("video")).start();
//
// The WebSocket speaks the player protocol (Protocol/player-protocol.md) as JSON text frames,
// plus the endpoint's time service ({"type":"time","t1":…}). Times on the wire are host time
// (the agent machine's CLOCK_MONOTONIC, ns); HostClock maps them to performance.now().

/** A WebSocket to the agent's player socket: requests with replies, and events. */
export class LockstepConnection extends EventTarget {
  /** Opens ws(s)://<this page's host>/ws; rejects if the endpoint refuses (not paired, other origin). */
  static open(url = defaultURL()) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.onopen = () => resolve(new LockstepConnection(ws));
      ws.onerror = () => reject(new Error("the agent refused the connection (pair this browser first?)"));
    });
  }

  constructor(ws) {
    super();
    this.ws = ws;
    this.nextID = 1;
    this.pending = new Map();
    ws.onmessage = (m) => this.#receive(m.data, performance.now());
    ws.onclose = () => {
      for (const p of this.pending.values()) p.reject(new Error("disconnected"));
      this.pending.clear();
      this.dispatchEvent(new CustomEvent("close"));
    };
  }

  /** Sends a request and resolves with its result (rejects with the agent's error). */
  request(type, params = {}) {
    const id = this.nextID++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ ...params, type, request_id: id }));
    });
  }

  /** Sends a request without reply (position reports). */
  notify(type, params = {}) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ ...params, type }));
  }

  /** Sends a raw frame (the time service stamps t1 itself). */
  sendRaw(text) { this.ws.send(text); }

  close() { this.ws.close(); }

  #receive(text, receivedAt) {
    let m;
    try { m = JSON.parse(text); } catch { return; }
    if (m.event === "time") { this.dispatchEvent(new CustomEvent("time", { detail: { ...m, t4: receivedAt } })); return; }
    if (m.event) { this.dispatchEvent(new CustomEvent(m.event, { detail: m })); this.dispatchEvent(new CustomEvent("event", { detail: m })); return; }
    if (m.request_id !== undefined && this.pending.has(m.request_id)) {
      const p = this.pending.get(m.request_id);
      this.pending.delete(m.request_id);
      if (m.ok) p.resolve(m.result ?? {});
      else p.reject(Object.assign(new Error(`${m.error?.code}: ${m.error?.message}`), { code: m.error?.code }));
    }
  }
}

function defaultURL() {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
}

/**
 * The agent's host time seen from this page: NTP-style exchanges with the endpoint's time
 * service, performance.now() on this side. Keeps the exchanges of least round trip (their
 * offsets are the least disturbed by queueing), and fits the offset's drift over the last two
 * minutes by least squares on the best exchange of each 2 s window.
 */
export class HostClock extends EventTarget {
  constructor(connection, { interval = 200, burst = 20 } = {}) {
    super();
    this.connection = connection;
    this.interval = interval;
    this.burst = burst;
    this.samples = [];   // {t (ms, perf), offset (ns: host − perf), delay (ns)}
    this.fit = null;     // {t0, a, b}: offset(t) = a + b·(t − t0)
    this.sent = 0;
    connection.addEventListener("time", (e) => this.#onTime(e.detail));
  }

  start() {
    const tick = () => {
      this.connection.sendRaw(`{"type":"time","t1":${performance.now()}}`);
      this.sent++;
      this.timer = setTimeout(tick, this.sent < this.burst ? 25 : this.interval);
    };
    tick();
  }

  stop() { clearTimeout(this.timer); }

  /** Whether enough exchanges came back to map times. */
  get synced() { return this.samples.length >= 5; }

  /** host − perf in ns at perf time `t` (ms). */
  offsetAt(t = performance.now()) {
    if (this.fit) return this.fit.a + this.fit.b * (t - this.fit.t0);
    return this.best()?.offset ?? 0;
  }

  /** Half the least round trip of the last 10 s, ns: how far the offset can be off at worst from the path alone. */
  get errorBoundNs() { const b = this.best(); return b ? b.delay / 2 : Infinity; }

  /** Drift of this page's clock against host time, ppm (0 until fitted). */
  get skewPPM() { return this.fit ? this.fit.b : 0; }  // b is ns per ms: ppm

  /** The exchange of least round trip among the last 10 s. */
  best() {
    const since = performance.now() - 10000;
    let best = null;
    for (let i = this.samples.length - 1; i >= 0 && this.samples[i].t >= since; i--) {
      if (!best || this.samples[i].delay < best.delay) best = this.samples[i];
    }
    return best ?? this.samples[this.samples.length - 1] ?? null;
  }

  hostNow() { return this.hostFromPerf(performance.now()); }
  hostFromPerf(ms) { return ms * 1e6 + this.offsetAt(ms); }
  perfFromHost(ns) { const guess = (ns - this.offsetAt()) / 1e6; return (ns - this.offsetAt(guess)) / 1e6; }

  #onTime(m) {
    const t1 = m.t1 * 1e6, t4 = m.t4 * 1e6;
    const delay = (t4 - t1) - (m.t3_ns - m.t2_ns);
    if (!(delay >= 0) || delay > 1e9) return;
    const offset = ((m.t2_ns - t1) + (m.t3_ns - t4)) / 2;
    const t = (m.t1 + m.t4) / 2;
    this.samples.push({ t, offset, delay });
    const horizon = t - 120000;
    while (this.samples.length && (this.samples[0].t < horizon || this.samples.length > 1200)) this.samples.shift();
    this.#refit();
    this.dispatchEvent(new CustomEvent("sample", { detail: { t, offset, delay } }));
  }

  #refit() {
    // The best exchange of each 2 s window; a line through them if they span 10 s or more.
    const windows = new Map();
    for (const s of this.samples) {
      const k = Math.floor(s.t / 2000);
      const w = windows.get(k);
      if (!w || s.delay < w.delay) windows.set(k, s);
    }
    // Windows whose best round trip is far above the least one say little: a page in a
    // background tab (timers throttled, messages handled up to a second late) or a congested
    // Wi-Fi. Left in, a few of them tilt the line and move the level by hundreds of ms.
    const all = [...windows.values()];
    const least = Math.min(...all.map((p) => p.delay));
    const pts = all.filter((p) => p.delay <= 2 * least + 2e6);
    if (pts.length < 5 || pts[pts.length - 1].t - pts[0].t < 10000) { this.fit = null; return; }
    const t0 = pts[pts.length - 1].t;
    let sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const p of pts) { const x = p.t - t0; sx += x; sy += p.offset; sxx += x * x; sxy += x * p.offset; }
    const n = pts.length, den = n * sxx - sx * sx;
    const b = den > 0 ? (n * sxy - sx * sy) / den : 0;
    const a = (sy - b * sx) / n;
    // Anchor on the best recent exchange among those kept: the line gives the drift, the best
    // exchange the level.
    const recent = pts.filter((p) => p.t >= t0 - 30000);
    const best = recent.reduce((m, p) => (!m || p.delay < m.delay ? p : m), null);
    const level = best ? best.offset - (a + b * (best.t - t0)) : 0;
    this.fit = { t0, a: a + level, b };
  }
}

/**
 * A player of the agent: the same concepts as the Swift SDK's PlaybackCoordinator (docs/sdk.md).
 * Events: "timeline", "wait", "participants", "item_proposed", "concurrent_commands",
 * "group_playback", "suspension", "correction" (detail: the agent's event).
 */
export class PlaybackCoordinator extends EventTarget {
  constructor(connection, clock, { name = "browser", startLatencyNs = 150e6, outputLatencyNs, syncToleranceNs = 10e9 } = {}) {
    super();
    this.connection = connection;
    this.clock = clock;
    this.options = { name, startLatencyNs, outputLatencyNs, syncToleranceNs };
    this.timeline = null;
    this.participants = [];
    this.item = null;
    for (const name of ["timeline", "wait", "participants", "item_proposed", "concurrent_commands", "group_playback", "suspension", "correction"]) {
      connection.addEventListener(name, (e) => {
        if (name === "timeline") this.timeline = e.detail;
        if (name === "participants") this.participants = e.detail.participants ?? [];
        this.dispatchEvent(new CustomEvent(name, { detail: e.detail }));
      });
    }
  }

  /** Says hello as a player. The page corrects its own drift (it has the timeline and the clock), so it
   *  asks the agent for no corrections below syncToleranceNs. */
  async connect() {
    const o = this.options;
    const hello = { protocol: 1, role: "player", name: o.name, start_latency_ns: Math.round(o.startLatencyNs),
      sync_tolerance_ns: Math.round(o.syncToleranceNs), capabilities: { rate: true, exact_seek: false, start_at_host_time: true } };
    if (o.outputLatencyNs !== undefined) hello.output_latency_ns = Math.round(o.outputLatencyNs);
    const r = await this.connection.request("hello", hello);
    this.playerID = r.player_id;
    return r;
  }

  /** Plays `item` with the group (or adopts the group's timeline for it). */
  async transitionToItem(item, { share = "group", title, durationNs } = {}) {
    const p = { item, share };
    if (title) p.title = title;
    if (durationNs) p.duration_ns = Math.round(durationNs);
    const r = await this.connection.request("load", p);
    this.item = item;
    return r;
  }

  /** Loads what the group plays; resolves with its item. */
  async joinGroup() { const r = await this.connection.request("join_group"); this.item = r.item; return r.item; }
  async leaveItem() { await this.connection.request("unload"); this.item = null; }
  setReady(ready = true) { return this.connection.request(ready ? "ready" : "buffering"); }
  coordinatePlay() { return this.connection.request("intent", { action: "play" }); }
  coordinatePause() { return this.connection.request("intent", { action: "pause" }); }
  coordinateSeek(positionNs) { return this.connection.request("intent", { action: "seek", position_ns: Math.round(positionNs) }); }
  coordinateRateChange(rate) { return this.connection.request("intent", { action: "rate", rate }); }
  playImmediately(rate) { return this.connection.request("play_immediately", rate ? { rate } : {}); }
  async beginSuspension(reason) { return (await this.connection.request("begin_suspension", { reason })).suspension_id; }
  endSuspension(id, proposePositionNs) {
    const p = { suspension_id: id };
    if (proposePositionNs !== undefined) p.propose_position_ns = Math.round(proposePositionNs);
    return this.connection.request("end_suspension", p);
  }
  /** Reports that at host time `hostNs` the media was at `positionNs` (no reply). */
  reportPosition(positionNs, hostNs) { this.connection.notify("position", { position_ns: Math.round(positionNs), host_time_ns: Math.round(hostNs) }); }

  /** Where the timeline says the media is at host time `hostNs` (ns), or null. */
  expectedPosition(hostNs) {
    const tl = this.timeline;
    if (!tl) return null;
    if (tl.state !== "playing" || hostNs < tl.host_time_ns) return tl.position_ns;
    return tl.position_ns + (hostNs - tl.host_time_ns) * tl.rate;
  }
}

/** Words for a timeline's origin: "h2 (mpv) paused", "this browser seeked". */
export function describeOrigin(o) {
  if (!o) return "";
  const verbs = { play: "played", pause: "paused", seek: "seeked", rate: "changed the rate", stop: "stopped", load: "loaded", start: "started" };
  const who = o.local ? (o.player ? `${o.player} (here)` : "this agent") : (o.player ? `${o.name} (${o.player})` : o.name);
  return `${who} ${verbs[o.action] ?? o.action}${o.reason ? ` (${o.reason})` : ""}`;
}

/**
 * Makes an HTML5 <video>/<audio> follow the coordinator's timelines: starts at the anchored
 * instant, follows pause/seek/rate, corrects drift with small playbackRate nudges and seeks when
 * far off, reports its position, and reports buffering (the agent suspends it meanwhile).
 * `resolveItem(item)` turns the group's item into a URL this browser can load (default: the
 * agent's /media/ folder by file name, or the item itself if it is an http(s) URL).
 */
export class MediaElementPlayer extends EventTarget {
  constructor(coordinator, element, { resolveItem = defaultResolve, seekThresholdMs = 30, deadbandMs = 0.5, correctionSeconds = 0.4, maxNudge = 0.05 } = {}) {
    super();
    this.c = coordinator;
    this.el = element;
    // Resampling instead of time-stretching for the rate nudges (see #control).
    element.preservesPitch = false;
    this.resolveItem = resolveItem;
    this.tuning = { seekThresholdMs, deadbandMs, correctionSeconds, maxNudge };
    this.errorMs = null;      // last measured error, ms (media − timeline)
    this.seekLatencyMs = 120; // from setting currentTime while playing to a moving position: measured once, then learnt
    this.playLatencyMs = 0;   // from play() to a moving position: measured once, then learnt from each start
    this.ready = false;
    this.startTimer = null;
    coordinator.addEventListener("timeline", (e) => this.#follow(e.detail));
    coordinator.addEventListener("item_proposed", (e) => { if (e.detail.item) this.#loadGroupItem(); });
    // A stall (not one of our own seeks) is reported as buffering: the agent suspends this player
    // for stall recovery and gives it the group's timeline again when it says ready.
    element.addEventListener("waiting", () => {
      if (this.ready && !element.seeking && !this.calibrating) { this.ready = false; this.c.setReady(false).catch(() => {}); }
    });
    element.addEventListener("canplay", async () => {
      if (this.ready || !this.c.item || this.calibrating) return;
      if (!this.calibrated) {
        this.calibrating = true;
        await this.#calibrate().catch(() => {});
        this.calibrating = false;
        this.calibrated = true;
        if (this.pendingTimeline) { const tl = this.pendingTimeline; this.pendingTimeline = null; this.#follow(tl); }
      }
      if (!this.ready && this.c.item && !this.el.seeking) { this.ready = true; this.c.setReady(true).catch(() => {}); }
    });
  }

  /** Loads the group's item (if any) and starts the control loop. */
  async start() {
    await this.#loadGroupItem().catch(() => {});
    this.loop = setInterval(() => this.#control(), 50);
  }

  async #loadGroupItem() {
    const item = await this.c.joinGroup();
    const url = this.resolveItem(item);
    this.ready = false;
    if (this.el.getAttribute("src") !== url) { this.el.src = url; this.el.load(); }
    else if (this.el.readyState >= 3) { this.ready = true; await this.c.setReady(true); }
  }

  /** The element's position and the host time it was read at (ns), read as close together as possible. */
  sample() {
    const before = performance.now();
    const position = this.el.currentTime;
    const after = performance.now();
    return { positionNs: position * 1e9, hostNs: this.c.clock.hostFromPerf((before + after) / 2) };
  }

  #follow(tl) {
    if (this.calibrating) { this.pendingTimeline = tl; return; }
    clearTimeout(this.startTimer);
    this.recent = [];
    this.dispatchEvent(new CustomEvent("change", { detail: { text: describeOrigin(tl.origin), timeline: tl } }));
    const el = this.el;
    if (tl.state !== "playing") {
      el.pause();
      el.playbackRate = 1;
      if (Math.abs(el.currentTime * 1e9 - tl.position_ns) > 1e6) el.currentTime = tl.position_ns / 1e9;
      return;
    }
    const now = this.c.clock.hostNow();
    const leadMs = (tl.host_time_ns - now) / 1e6;
    const L = this.playLatencyMs;
    if (leadMs > L + 20) {
      // Ahead of the start: stand L before the start position and press play L before the
      // instant, L being how long this browser takes from play() to a moving position.
      el.pause();
      const from = Math.max(0, tl.position_ns - L * 1e6 * tl.rate);
      if (Math.abs(el.currentTime * 1e9 - from) > 1e6) el.currentTime = from / 1e9;
      const due = this.c.clock.perfFromHost(tl.host_time_ns) - L;
      const fire = () => {
        const left = due - performance.now();
        if (left > 4) { this.startTimer = setTimeout(fire, Math.max(0, left - 4)); return; }
        while (performance.now() < due) { /* the last few ms, precisely */ }
        el.playbackRate = tl.rate;
        el.play().catch(() => {});
        this.learnStart = tl;
      };
      fire();
    } else {
      el.playbackRate = tl.rate;
      const offMs = (el.currentTime * 1e9 - this.c.expectedPosition(now)) / 1e6;
      if (!el.paused && !el.seeking && Math.abs(offMs) < this.tuning.seekThresholdMs) return;  // already on it: the loop trims the rest
      // Joining a running timeline: jump to where it will be once the seek is done.
      this.#seekAhead(tl);
      el.play().catch(() => {});
    }
  }

  /** Plays for a moment (muted) to measure how long play() and a seek while playing take to
   *  move the position: where the page stands before a start, and how far ahead it seeks. */
  async #calibrate() {
    const el = this.el, muted = el.muted, at = el.currentTime;
    el.muted = true;
    const moving = async (from, asked) => {
      let t = asked, p = from;
      while (performance.now() - asked < 1500) {
        await new Promise((r) => setTimeout(r, 5));
        t = performance.now(); p = el.currentTime;
        if (p - from > 0.1 && p - from < 1) break;
      }
      return p > from ? Math.max(0, Math.min(500, (t - asked) - (p - from) * 1000)) : null;
    };
    // Twice: the first play() of a page also opens the audio output, which later starts do not.
    for (let i = 0; i < 2; i++) {
      if (i > 0) { el.pause(); el.currentTime = at; await new Promise((r) => el.addEventListener("seeked", r, { once: true })); }
      const asked = performance.now();
      await el.play();
      this.playLatencyMs = (await moving(at, asked)) ?? this.playLatencyMs;
    }
    const seekAsked = performance.now();
    el.currentTime = at + 2;
    this.seekLatencyMs = Math.max(20, (await moving(at + 2, seekAsked)) ?? this.seekLatencyMs);
    el.pause();
    el.muted = muted;
    el.currentTime = at;
    await new Promise((r) => el.addEventListener("seeked", r, { once: true }));
  }

  #seekAhead(tl) {
    const target = this.c.expectedPosition(this.c.clock.hostNow() + this.seekLatencyMs * 1e6);
    this.el.currentTime = target / 1e9;
    this.lastSeek = performance.now();
    this.learnSeek = tl;
    this.recent = [];
  }

  #control() {
    const tl = this.c.timeline, el = this.el;
    if (!tl || this.calibrating || !this.c.clock.synced || el.seeking || el.readyState < 2) return;
    // Right after a seek the position stands still until the media restarts: nothing to measure yet.
    if (performance.now() - (this.lastSeek ?? -Infinity) < this.seekLatencyMs + 250) return;
    const { positionNs, hostNs } = this.sample();
    if (tl.state !== "playing" || hostNs < tl.host_time_ns) { this.errorMs = null; return; }
    const expected = this.c.expectedPosition(hostNs);
    // currentTime moves in steps (audio render quanta): a reading is late by up to one step,
    // never early. The least late of the last 300 ms is the error.
    const raw = (positionNs - expected) / 1e6;
    this.recent = (this.recent ?? []).concat([raw]).slice(-6);
    const err = Math.max(...this.recent);
    this.errorMs = err;
    // The first error after a seek (a start) says how far off the seek's (play()'s) latency was.
    // An error beyond any plausible misestimate teaches nothing (the element was held paused, the
    // tab was throttled): learnt, it would make every later seek miss by as much, and once the
    // latency grew past the re-seek interval the page would seek for ever without learning back.
    if (this.learnSeek === tl && this.recent.length >= 3) {
      if (Math.abs(err) < 250) this.seekLatencyMs = Math.max(20, Math.min(1000, this.seekLatencyMs - err));
      this.learnSeek = null;
    }
    if (this.learnStart === tl && hostNs - tl.host_time_ns > 150e6 && this.recent.length >= 3) {
      if (Math.abs(err) < 200) this.playLatencyMs = Math.max(0, Math.min(500, this.playLatencyMs - err));
      this.learnStart = null;
    }
    // Reports every 100 ms (the protocol's "plenty"), though the loop looks every 50 ms.
    if (!el.paused && performance.now() - (this.lastReport ?? -Infinity) >= 95) {
      this.c.reportPosition(positionNs, hostNs);
      this.lastReport = performance.now();
    }
    if (el.paused) { el.playbackRate = tl.rate; el.play().catch(() => {}); return; }
    const t = this.tuning;
    if (Math.abs(err) > t.seekThresholdMs) {
      // Not before the last seek was measured (three readings), so that it teaches its lesson.
      if (this.recent.length >= 3 && performance.now() - (this.lastSeek ?? 0) > 1000) this.#seekAhead(tl);
      return;
    }
    // Nudges of at most 5 % (under a semitone, for half a second), farther than seekThresholdMs a seek. With
    // time-stretching (preservesPitch) Chromium loses about 20 ms at every rate change: resample instead.
    // At least 0.2 %: Chromium seems to ignore smaller rate changes.
    const want = Math.max(0.002, Math.min(t.maxNudge, Math.abs(err) / 1000 / t.correctionSeconds));
    const nudge = Math.abs(err) < t.deadbandMs ? 0 : Math.sign(err) * want;
    const rate = tl.rate * (1 - nudge);
    if (rate !== el.playbackRate) el.playbackRate = rate;
  }
}

function defaultResolve(item) {
  if (/^https?:\/\//.test(item)) return item;
  const name = item.replace(/^file:\/\//, "").split("/").pop();
  return "/media/" + encodeURIComponent(name);
}
