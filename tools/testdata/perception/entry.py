"""A GTK 3 window with two text fields, Other and Name, through ctypes
(the browser image has GTK for Chromium, not Python's bindings). Other has
the keyboard focus when it opens; Name takes it late: the first time it
gets it, it gives it to Other and takes it back 1.5 s later (longer than
a focus's wait for a still screen, resources/agent/agent.py
FOCUS_SETTLE)."""

import ctypes

gtk = ctypes.CDLL("libgtk-3.so.0")
atk = ctypes.CDLL("libatk-1.0.so.0")
gobject = ctypes.CDLL("libgobject-2.0.so.0")
glib = ctypes.CDLL("libglib-2.0.so.0")
gtk.gtk_init(None, None)
for f in ("gtk_window_new", "gtk_box_new", "gtk_entry_new", "gtk_widget_get_accessible"):
    getattr(gtk, f).restype = ctypes.c_void_p
gtk.gtk_widget_get_accessible.argtypes = [ctypes.c_void_p]
gtk.gtk_window_set_title.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
gtk.gtk_window_set_default_size.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
gtk.gtk_container_add.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
gtk.gtk_widget_show_all.argtypes = [ctypes.c_void_p]
gtk.gtk_widget_grab_focus.argtypes = [ctypes.c_void_p]
atk.atk_object_set_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
FOCUS_IN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
SOURCE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
gobject.g_signal_connect_data.argtypes = [ctypes.c_void_p, ctypes.c_char_p, FOCUS_IN, ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_int]
glib.g_timeout_add.argtypes = [ctypes.c_uint, SOURCE, ctypes.c_void_p]

window = gtk.gtk_window_new(0)
gtk.gtk_window_set_title(window, b"Pilot entry")
gtk.gtk_window_set_default_size(window, 400, 120)
box = gtk.gtk_box_new(1, 8)  # vertical
gtk.gtk_container_add(window, box)
fields = {}
for name in (b"Other", b"Name"):
    fields[name] = gtk.gtk_entry_new()
    atk.atk_object_set_name(gtk.gtk_widget_get_accessible(fields[name]), name)
    gtk.gtk_container_add(box, fields[name])
late = [True]

@SOURCE
def take_back(_):
    gtk.gtk_widget_grab_focus(fields[b"Name"])
    return 0  # once

@FOCUS_IN
def on_focus_in(widget, event, data):
    if late[0]:
        late[0] = False
        gtk.gtk_widget_grab_focus(fields[b"Other"])
        glib.g_timeout_add(1500, take_back, None)
    return 0

gobject.g_signal_connect_data(fields[b"Name"], b"focus-in-event", on_focus_in, None, None, 0)
gtk.gtk_widget_show_all(window)
gtk.gtk_widget_grab_focus(fields[b"Other"])
gtk.gtk_main()
