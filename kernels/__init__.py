"""Schedules: the blog's demos ported literally, better hand-written schedules, and generated ones."""
