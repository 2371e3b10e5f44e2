// Herald dashboard: copy buttons and confirmations (the pages work without it).
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = 'Copied';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
  }
});
document.addEventListener('submit', (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.getAttribute('data-confirm') : null;
  if (question && !window.confirm(question)) event.preventDefault();
});
// The metrics chart: uPlot (loaded by the metrics page) draws the series in data-series.
document.addEventListener('DOMContentLoaded', () => {
  const element = document.querySelector('[data-chart="outcomes"]');
  if (!element || !window.uPlot) return;
  const data = JSON.parse(element.getAttribute('data-series'));
  const seconds = data.dates.map((date) => Date.parse(`${date}T00:00:00Z`) / 1000);
  const line = (label, stroke) => ({ label, stroke, width: 2, points: { show: seconds.length <= 31 } });
  const draw = () => {
    element.textContent = '';
    new window.uPlot(
      {
        width: Math.max(280, element.clientWidth),
        height: 280,
        scales: { x: { time: true } },
        // One tick per day or per few days, labelled with the UTC date (the series are UTC days).
        axes: [
          {
            incrs: [86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400],
            values: (_plot, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(5, 10)),
          },
          { size: 60 },
        ],
        series: [{}, line('Sent', '#0b5cad'), line('Delivered', '#1a7f37'), line('Bounced', '#b42318'), line('Complained', '#8250df')],
      },
      [seconds, data.sent, data.delivered, data.bounced, data.complained],
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
// A segment's rule: when its tags change, the form is sent again to count the matching contacts.
document.addEventListener('change', (event) => {
  const field = event.target instanceof Element ? event.target.closest('[data-recount]') : null;
  const recount = field?.form?.querySelector('button[name="action"][value="count"]');
  if (recount) field.form.requestSubmit(recount);
});
