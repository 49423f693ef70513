/// Talking to mpv over its JSON IPC (`--input-ipc-server`): the bridge (`lockstep mpv`) and the
/// mpv benchmark's probe build on this module.
///
/// ## Contents
/// - ``MPVConnection``: one IPC client connection: requests with `request_id` matched to their
///   replies, events, property observation, host timestamps on every line, clean end when mpv
///   quits, reconnecting (connect with a timeout).
/// - ``MPVValue``: mpv's JSON values.
/// - ``MPVOptions`` and ``MPVProcess``: the command line of a headless mpv, and starting one,
///   waiting until it answers, suspending (SIGSTOP) and stopping it; ``PosixSpawn``: starting a
///   child in a clean signal state (also the lab's).
/// - ``PositionTrack``, ``PositionProbe``: players' media positions read with host times and
///   estimated at common host instants; ``ProbeCheck``: the proof of the probe's precision.
///
/// ## mpv versions
/// Written and tested against mpv 0.35.1 (Debian 12). Only documented IPC is used
/// (<https://mpv.io/manual/stable/#json-ipc>, <https://mpv.io/manual/stable/#properties>), all of
/// it present in mpv 0.33 and later.
///
/// ## What is relied upon
/// - `--input-ipc-server=PATH`: a Unix socket that takes several clients at once (Syncplay and
///   the benchmark's probe use one mpv together); `--idle=yes` keeps mpv alive without a file.
/// - Requests `{"command":[...],"request_id":N}`, one per line; replies carry the same
///   `request_id` with `error` (`"success"` or a reason) and `data`. Replies and events may
///   interleave; events have an `event` field and no `request_id`.
/// - Commands: `get_property`, `set_property`, `observe_property`, `unobserve_property`,
///   `seek <s> absolute|absolute+exact`, `loadfile`, `stop`, `quit` (and `expand-text` in tests).
/// - Events: `property-change` (with `id`, `name`, `data`), `seek`, `playback-restart`,
///   `file-loaded`, `end-file` (with `reason`), `start-file`, `idle`. The deprecated `pause`
///   and `unpause` events are not used: observe the `pause` property instead.
/// - Properties: `audio-pts`, `time-pos`, `playback-time`, `pause`, `seeking`, `duration`,
///   `speed`, `pid`, `mpv-version`, `idle-active`.
///
/// ## Facts measured with mpv 0.35.1, `--vo=null --ao=null`
/// - `audio-pts` is computed at each request (pts of the audio written minus the null output's
///   delay, which falls with host time), so it moves continuously: readings 10 ms apart lie on
///   a line of slope 1 within ~0.2 ms. `time-pos`/`playback-time` step: once per block of audio
///   written (10 ms with `--ao-null-buffer=0.02` and 10 ms Opus frames, 50–100 ms with the
///   default 0.2 s buffer) or once per video frame (40 ms at 25 fps).
/// - `--ao-null-buffer=0.02` underruns on a busy 2-core machine (each underrun loses time); the
///   default buffer does not. Positions here are read from `audio-pts`, so the default is kept.
/// - Paused after playing, `audio-pts` is exactly where playback resumes (a line through the
///   readings after the resume meets the paused value within 0.06 ms of the instant the
///   resume request was written). Paused right after a seek, `audio-pts` and `time-pos` read up to
///   the audio buffer (0.18 s) short of where playback will resume.
/// - During a seek `audio-pts` is unavailable (`"property unavailable"`) for a few ms.
/// - A SIGSTOPped mpv stops answering; after SIGCONT its null output has "played" its buffer
///   during the stall (0.2 s by default), so a 1 s stall leaves it about 0.8 s behind.
public enum MPV {}
