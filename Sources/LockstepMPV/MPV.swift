/// Talking to mpv over its JSON IPC (`--input-ipc-server`): the bridge (`lockstep mpv`) and the
/// mpv benchmark's probe build on this module.
public enum MPV {}
