/** `npm run build`'s second step: the owners' console's script (src/web/console/browser) into dist/console.js. */
import { buildConsoleScript } from "../src/web/console/bundle";

buildConsoleScript().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
