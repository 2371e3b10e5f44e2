// Herald broadcast page: the counters as a uPlot bar chart (the tiles and the Refresh header work without it).
document.addEventListener('DOMContentLoaded', () => {
  const element = document.querySelector('[data-chart="funnel"]');
  if (!element || !window.uPlot) return;
  const data = JSON.parse(element.getAttribute('data-series'));
  const xs = data.labels.map((_label, i) => i);
  const draw = () => {
    element.textContent = '';
    new window.uPlot(
      {
        width: Math.max(280, element.clientWidth),
        height: 260,
        scales: { x: { time: false, range: [-0.5, xs.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { splits: () => xs, values: (_u, splits) => splits.map((i) => data.labels[i] ?? '') },
          { size: 60, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6] },
        ],
        legend: { show: false },
        series: [
          {},
          {
            label: 'Messages',
            fill: '#0b5cad',
            stroke: '#0b5cad',
            paths: window.uPlot.paths.bars({ size: [0.6, 80] }),
            points: { show: false },
          },
        ],
      },
      [xs, data.values],
      element,
    );
  };
  draw();
  let resizing;
  window.addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(draw, 150);
  });
});
