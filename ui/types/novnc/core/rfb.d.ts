// The part of noVNC's RFB class (core/rfb.js, noVNC 1.3, as the sandbox
// image installs it) that the sandbox's viewer page uses, for tsc. The page
// imports ../core/rfb.js from the noVNC directory; tsconfig's rootDirs put
// this file in its place.

export interface RFBOptions {
  credentials?: { password?: string; username?: string; target?: string };
  shared?: boolean;
  repeaterID?: string;
  wsProtocols?: string[];
}

export interface RFBEventMap {
  connect: CustomEvent<{}>;
  disconnect: CustomEvent<{ clean: boolean }>;
  credentialsrequired: CustomEvent<{ types: string[] }>;
  securityfailure: CustomEvent<{ status: number; reason?: string }>;
  desktopname: CustomEvent<{ name: string }>;
  clipboard: CustomEvent<{ text: string }>;
}

export default class RFB extends EventTarget {
  constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: RFBOptions);
  viewOnly: boolean;
  focusOnClick: boolean;
  clipViewport: boolean;
  scaleViewport: boolean;
  resizeSession: boolean;
  showDotCursor: boolean;
  background: string;
  qualityLevel: number;
  compressionLevel: number;
  disconnect(): void;
  sendCredentials(credentials: { password?: string }): void;
  focus(): void;
  blur(): void;
  clipboardPasteFrom(text: string): void;
  addEventListener<K extends keyof RFBEventMap>(type: K, listener: (event: RFBEventMap[K]) => void): void;
}
