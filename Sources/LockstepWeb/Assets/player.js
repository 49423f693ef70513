// The web player page: pairs if needed, then plays the group's item in step with it.
import { LockstepConnection, HostClock, PlaybackCoordinator, MediaElementPlayer } from "/lockstep.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

async function main() {
  let connection;
  try {
    connection = await LockstepConnection.open();
  } catch {
    showPairing();
    return;
  }
  const clock = new HostClock(connection);
  clock.start();
  const media = $("media");
  media.muted = params.get("muted") !== "0";
  const coordinator = new PlaybackCoordinator(connection, clock, { name: params.get("name") ?? "browser" });
  await coordinator.connect();
  const player = new MediaElementPlayer(coordinator, media);
  window.lockstepPage = { connection, clock, coordinator, player };
  player.addEventListener("change", (e) => {
    const li = document.createElement("li");
    const tl = e.detail.timeline;
    li.textContent = `${new Date().toLocaleTimeString()} ${e.detail.text}: ${tl.state} at ${(tl.position_ns / 1e9).toFixed(2)} s`;
    $("changes").prepend(li);
    while ($("changes").children.length > 20) $("changes").lastChild.remove();
    $("state").textContent = `${tl.state}, rate ${Number(tl.rate).toFixed(3)}`;
  });
  coordinator.addEventListener("wait", (e) => { $("state").textContent = `waiting for ${(e.detail.waiting_for ?? []).map((w) => w.peer_name + " " + w.why).join(", ")}`; });
  $("play").onclick = () => coordinator.coordinatePlay();
  $("pause").onclick = () => coordinator.coordinatePause();
  const jump = (s) => coordinator.coordinateSeek(Math.max(0, (coordinator.expectedPosition(clock.hostNow()) ?? 0) + s * 1e9));
  $("back").onclick = () => jump(-10);
  $("forward").onclick = () => jump(10);
  $("unmute").onclick = () => { media.muted = false; media.play().catch(() => {}); };
  $("player").hidden = false;
  $("status").textContent = "Connected.";
  connection.addEventListener("close", () => { $("status").textContent = "Disconnected from the agent."; });
  await player.start();
  setInterval(() => {
    $("item").textContent = coordinator.item ?? "nothing (the group plays nothing yet)";
    $("clock").textContent = clock.synced ? `offset ${(clock.offsetAt() / 1e6).toFixed(3)} ms ± ${(clock.errorBoundNs / 1e6).toFixed(3)} ms, ${clock.skewPPM.toFixed(1)} ppm` : "synchronising…";
    $("error").textContent = player.errorMs === null ? "–" : `${player.errorMs.toFixed(1)} ms`;
  }, 250);
}

function showPairing() {
  $("pairing").hidden = false;
  $("status").textContent = "This browser is not paired with the agent.";
  $("pair-form").onsubmit = async (e) => {
    e.preventDefault();
    const r = await fetch("/pair", { method: "POST", body: $("pair-code").value });
    $("pair-result").textContent = await r.text();
    if (r.ok) location.reload();
  };
}

main().catch((e) => { $("status").textContent = "Error: " + e.message; });
