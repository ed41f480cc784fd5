/**
 * Preloaded into a child process a test runs (`node --require`): every TCP connection to an address
 * that is not loopback (127.0.0.0/8, ::1, localhost) is refused before any lookup and reported on
 * stderr as `loopback-only: refused ...`, so a test can run a third-party tool offline and tell if it tried.
 */
const net = require("node:net");

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost)$/;
const connect = net.Socket.prototype.connect;

net.Socket.prototype.connect = function (...args) {
  // net.connect hands over its normalised arguments as an array; a direct call passes options or (port, host).
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const options =
    typeof first === "object" && first !== null ? first : { port: first, host: typeof args[1] === "string" ? args[1] : "localhost" };
  if (options.path === undefined && !LOOPBACK.test(String(options.host ?? "localhost"))) {
    process.stderr.write(`loopback-only: refused a connection to ${options.host}:${options.port}\n`);
    process.nextTick(() => this.destroy(new Error(`loopback-only: ${options.host} is not a loopback address`)));
    return this;
  }
  return connect.apply(this, args);
};
