/**
 * Runs a batched deletion step until a batch comes back short (nothing left) or `maxBatches`
 * ran (bounding one run's history; the rest waits for the next scheduled run). Returns the
 * total. The step is an activity, so the calls are recorded one by one.
 */
export async function deleteInBatches(
  step: (batchSize: number) => Promise<{ deleted: number }>,
  options: { batchSize: number; maxBatches: number },
): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < options.maxBatches; batch += 1) {
    const result = await step(options.batchSize);
    deleted += result.deleted;
    if (result.deleted < options.batchSize) break;
  }
  return deleted;
}
