/** A console page of agents, proofs or webhooks (issue #29) in the console's layout, with what went wrong or was done at its top. */
import type { Html } from "../html";
import { CONSOLE_STYLE, type Notice, type RenderedPage } from "./common";
import { renderConsolePage, type ConsoleSection, type ConsoleViewer } from "./layout";

/** A console page of `status`: `main` in the console's layout (`current` marked in its navigation), `notice` at its top. */
export function consolePage<S extends number>(
  status: S,
  page: { title: string; main: Html; viewer: ConsoleViewer; current?: ConsoleSection; notice?: Notice },
): RenderedPage<S> {
  const { notice } = page;
  return {
    status,
    text: renderConsolePage({
      title: page.title,
      current: page.current,
      viewer: page.viewer,
      main: page.main,
      head: CONSOLE_STYLE,
      error: notice?.kind === "error" ? notice.text : undefined,
      notice: notice?.kind === "done" ? notice.text : undefined,
    }),
  };
}
