// The waveform and level meter shown while audio plays.

export class Scope {
  constructor(canvas, meter) {
    this.canvas = canvas;
    this.meter = meter;
    this.g = canvas.getContext("2d");
    this.data = new Float32Array(1024);
    this.flat = true;
  }

  // Draw the current waveform (flat when silent); returns the RMS level.
  render(player, playing) {
    const level = playing ? player.sample(this.data) : 0;
    this.meter.value = Math.min(1, level * 3);
    if (!playing && this.flat) return level;
    this.flat = !playing;
    this.fitToPixels();
    const { width, height } = this.canvas;
    const g = this.g;
    g.clearRect(0, 0, width, height);
    g.lineWidth = 2 * (window.devicePixelRatio || 1);
    g.strokeStyle = getComputedStyle(this.canvas).color;
    g.beginPath();
    const n = this.data.length;
    for (let i = 0; i < n; i++) {
      const x = (i / (n - 1)) * width;
      const y = height / 2 - (playing ? this.data[i] : 0) * height * 0.9;
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    }
    g.stroke();
    return level;
  }

  fitToPixels() {
    const ratio = window.devicePixelRatio || 1;
    const w = Math.round(this.canvas.clientWidth * ratio);
    const h = Math.round(this.canvas.clientHeight * ratio);
    if (w && h && (this.canvas.width !== w || this.canvas.height !== h)) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
  }
}
