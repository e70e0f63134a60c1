// The runs list: status chips change live over the runs socket.
(function () {
  "use strict";
  let retry = 500;
  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${proto}://${location.host}/ws/runs/`);
    socket.onopen = () => { retry = 500; };
    socket.onmessage = (event) => {
      const data = JSON.parse(event.data);
      const row = document.querySelector(`tr[data-run="${data.run_id}"]`);
      if (!row) return;
      for (const msg of data.messages) {
        const chip = row.querySelector("[data-status]");
        chip.textContent = msg.status; chip.className = "chip " + msg.status;
        if (msg.max_steps) row.querySelector("[data-progress]").textContent = `${msg.step}/${msg.max_steps}`;
      }
    };
    socket.onclose = () => { setTimeout(connect, retry); retry = Math.min(10000, retry * 2); };
  }
  connect();
})();
