"""A GTK 3 question dialog, through ctypes (the browser image has GTK for
Chromium, not Python's bindings): prints the answer's response id
(GTK_RESPONSE_YES -8, GTK_RESPONSE_NO -9) when a button is pressed."""

import ctypes

gtk = ctypes.CDLL("libgtk-3.so.0")
gtk.gtk_init(None, None)
gtk.gtk_message_dialog_new.restype = ctypes.c_void_p
gtk.gtk_message_dialog_new.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p]
gtk.gtk_window_set_title.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
gtk.gtk_dialog_run.argtypes = [ctypes.c_void_p]
QUESTION, YES_NO = 2, 4
dialog = gtk.gtk_message_dialog_new(None, 0, QUESTION, YES_NO, b"Delete the file?")
gtk.gtk_window_set_title(dialog, b"Pilot question")
print("answer", gtk.gtk_dialog_run(dialog), flush=True)
