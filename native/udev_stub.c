/* The five libudev functions the static libhwloc refers to, as "no udev".
 *
 * hwloc's Linux backend asks libudev for a block device's vendor, model and serial, which
 * numaplan never reads. Linking the real libudev.so.1 would make the binary need it at run
 * time: minimal containers lack it, and the manylinux policy of Python wheels does not allow
 * it. udev_new() returning NULL is hwloc's own path for "no udev" (it is what hwloc does under
 * HWLOC_FSROOT): it then reads /run/udev/data, and never calls the other four. See build.rs. */
#include <stddef.h>

struct udev;
struct udev_device;

struct udev *udev_new(void) { return NULL; }

struct udev *udev_unref(struct udev *udev) {
  (void)udev;
  return NULL;
}

struct udev_device *udev_device_new_from_subsystem_sysname(struct udev *udev,
                                                           const char *subsystem,
                                                           const char *sysname) {
  (void)udev;
  (void)subsystem;
  (void)sysname;
  return NULL;
}

const char *udev_device_get_property_value(struct udev_device *device, const char *key) {
  (void)device;
  (void)key;
  return NULL;
}

struct udev_device *udev_device_unref(struct udev_device *device) {
  (void)device;
  return NULL;
}
